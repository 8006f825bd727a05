package auth

import (
	"bufio"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
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

// LoadKeys reads the key entries of a keys file (one per line; blank
// lines and lines starting with # are skipped) and of a comma-separated
// list (TADPOLE_API_KEYS). Either may be empty.
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
	for i, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if _, err := parseEntry(e); err != nil {
			return nil, fmt.Errorf("TADPOLE_API_KEYS entry %d: %w", i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// parseEntry is the SHA-256 hash an entry stands for: a key, or a hash
// written as "sha256:<hex>". Errors never quote the entry (it may be a
// key).
func parseEntry(e string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	if rest, ok := strings.CutPrefix(e, HashPrefix); ok {
		b, err := hex.DecodeString(rest)
		if err != nil || len(b) != sha256.Size {
			return h, fmt.Errorf("a hashed key must be %s followed by 64 hex digits", HashPrefix)
		}
		copy(h[:], b)
		return h, nil
	}
	if strings.ContainsAny(e, " \t") {
		return h, fmt.Errorf("a key may not contain spaces")
	}
	return sha256.Sum256([]byte(e)), nil
}

// keyID names a key in counters and logs: the first 12 hex digits of its
// hash, which do not reveal the key.
func keyID(h [sha256.Size]byte) string {
	return hex.EncodeToString(h[:6])
}
