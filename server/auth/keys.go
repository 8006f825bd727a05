package auth

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// HashPrefix starts a hashed key entry: "sha256:" and 64 hex digits.
const HashPrefix = "sha256:"

// Hash is the entry that stands for key in a keys file.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return HashPrefix + hex.EncodeToString(sum[:])
}

// NewKey returns a new random key (256 bits, URL-safe).
func NewKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new key: %w", err)
	}
	return "tp-" + base64.RawURLEncoding.EncodeToString(b), nil
}

// Scope is what a key may do.
type Scope string

const (
	// Inference keys may generate, embed, list and show models and run
	// jobs: every route but model management.
	Inference Scope = "inference"
	// Admin keys may also create, copy, delete, pull and push models and
	// upload blobs.
	Admin Scope = "admin"
)

// LoadKeys reads the key entries of a keys file (one per line; blank
// lines and lines starting with # are skipped) and of a comma-separated
// list (TADPOLE_API_KEYS). Either may be empty. An entry is a key or its
// "sha256:<hex>" hash, then optionally a space and its scope:
// "tp-abc… admin", "sha256:9f86… inference" (the default). Plain keys in
// the list (the environment, which other processes may read) are warned
// about.
func LoadKeys(file, list string) ([]string, error) {
	var out []string
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("api keys file: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if _, err := parseEntry(line); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			out = append(out, line)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
	}
	plain := 0
	for i, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if _, err := parseEntry(e); err != nil {
			return nil, fmt.Errorf("TADPOLE_API_KEYS entry %d: %w", i+1, err)
		}
		if !strings.HasPrefix(e, HashPrefix) {
			plain++
		}
		out = append(out, e)
	}
	if plain > 0 {
		slog.Warn("TADPOLE_API_KEYS holds plain-text keys, which other processes of this user may read; "+
			"put their sha256: lines there instead (tadpole keys hash) or use --api-keys-file", "plain_keys", plain)
	}
	return out, nil
}

// entry is a parsed key entry.
type entry struct {
	hash  [sha256.Size]byte
	scope Scope
}

// parseEntry reads an entry: a key or a hash written as "sha256:<hex>",
// then optionally whitespace and a scope. Errors never quote the entry
// (it may be a key).
func parseEntry(e string) (entry, error) {
	var out entry
	f := strings.Fields(e)
	switch len(f) {
	case 1:
		out.scope = Inference
	case 2:
		out.scope = Scope(f[1])
		if out.scope != Inference && out.scope != Admin {
			return out, fmt.Errorf("unknown scope: want %s or %s after the key", Inference, Admin)
		}
	default:
		return out, fmt.Errorf("an entry is a key (which may not contain spaces), then optionally a space and its scope (%s or %s)", Inference, Admin)
	}
	if rest, ok := strings.CutPrefix(f[0], HashPrefix); ok {
		b, err := hex.DecodeString(rest)
		if err != nil || len(b) != sha256.Size {
			return out, fmt.Errorf("a hashed key must be %s followed by 64 hex digits", HashPrefix)
		}
		copy(out.hash[:], b)
		return out, nil
	}
	out.hash = sha256.Sum256([]byte(f[0]))
	return out, nil
}

// keyID names a key in counters and logs: the first 12 hex digits of its
// hash, which do not reveal the key.
func keyID(h [sha256.Size]byte) string {
	return hex.EncodeToString(h[:6])
}
