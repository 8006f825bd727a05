package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// humanBytes formats a size the way Ollama's tables do, in decimal units:
// "512 B", "1.2 MB", "27 GB".
func humanBytes(n int64) string {
	units := []struct {
		size float64
		name string
	}{{1e12, "TB"}, {1e9, "GB"}, {1e6, "MB"}, {1e3, "KB"}}
	for _, u := range units {
		if float64(n) < u.size {
			continue
		}
		v := float64(n) / u.size
		switch {
		case v >= 10:
			return fmt.Sprintf("%d %s", int(v), u.name)
		case v != math.Trunc(v):
			return fmt.Sprintf("%.1f %s", v, u.name)
		}
		return fmt.Sprintf("%d %s", int(v), u.name)
	}
	return fmt.Sprintf("%d B", n)
}

// humanDuration is a rough length of time: "Less than a second",
// "5 seconds", "About a minute", "3 hours", "2 weeks".
func humanDuration(d time.Duration) string {
	s := int(d.Seconds())
	switch {
	case s < 1:
		return "Less than a second"
	case s == 1:
		return "1 second"
	case s < 60:
		return fmt.Sprintf("%d seconds", s)
	}
	m := int(d.Minutes())
	switch {
	case m == 1:
		return "About a minute"
	case m < 60:
		return fmt.Sprintf("%d minutes", m)
	}
	h := int(math.Round(d.Hours()))
	switch {
	case h == 1:
		return "About an hour"
	case h < 48:
		return fmt.Sprintf("%d hours", h)
	case h < 24*7*2:
		return fmt.Sprintf("%d days", h/24)
	case h < 24*30*2:
		return fmt.Sprintf("%d weeks", h/24/7)
	case h < 24*365*2:
		return fmt.Sprintf("%d months", h/24/30)
	}
	return fmt.Sprintf("%d years", int(d.Hours())/24/365)
}

// humanTime is t relative to now: "2 minutes ago", "4 minutes from
// now", "Forever" (beyond 20 years ahead, as for models kept loaded
// forever), or zero when t is the zero time.
func humanTime(t, now time.Time, zero string) string {
	if t.IsZero() {
		return zero
	}
	d := now.Sub(t)
	switch {
	case d < -20*365*24*time.Hour:
		return "Forever"
	case d < 0:
		return humanDuration(-d) + " from now"
	}
	return humanDuration(d) + " ago"
}

// shortDigest is the first 12 hex digits of a digest, with or without
// its "sha256:" prefix.
func shortDigest(d string) string {
	if _, hex, ok := strings.Cut(d, ":"); ok {
		d = hex
	}
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}

// rate is tokens per second, as --verbose shows it.
func rate(n int, d time.Duration) string {
	if d <= 0 {
		return "0.00 tokens/s"
	}
	return fmt.Sprintf("%.2f tokens/s", float64(n)/d.Seconds())
}
