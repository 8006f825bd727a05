package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Image files named in a typed prompt are attached to it, as `ollama
// run` does (extractFileNames, extractFileData and getImageData in
// Ollama's cmd/interactive.go):
//
//   - a path is a word that starts with ./ ../ / or ~/ (at the start of
//     the prompt, after a space, "(" or "["), with a backslash escaping
//     the next character ("./my\ cat.png"), or the whole of a '…' or "…"
//     quoted word ('./my cat.png'), and ends in .jpg, .jpeg, .png or .webp
//     (any case; .wav for audio), before any closing punctuation
//     ("./cat.png," "(./cat.png)");
//   - the file is read (at most maxAttachBytes, its content sniffed as
//     JPEG, PNG or WebP, WAV for .wav), the path (quotes included) is
//     removed from the prompt, and "Added image 'PATH'" is written to
//     standard error; the images go on the user message of /api/chat (the
//     chat) or on /api/generate's images (a one-shot prompt);
//   - unlike Ollama, a path that names no readable file is an error, not
//     text sent as it is, and so is an image for a model whose /api/show
//     capabilities lack "vision" ("audio" for .wav), where Ollama sends
//     the path to such a model as text: write a path in backticks
//     (`./cat.png`) to send it as text.
//
// Only the typed prompt is scanned, never text piped to standard input:
// a piped document does not get to read and upload local files.

// maxAttachBytes is the largest file attached, Ollama's 100 MB. The
// server's body limit (--max-body, 10 MiB by default) counts the file
// base64-encoded, a third larger.
const maxAttachBytes = 100 << 20

// mediaExts maps an attachable extension to its kind and the capability
// a model needs to take it.
var mediaExts = map[string]struct{ kind, capability string }{
	".jpg":  {"image", "vision"},
	".jpeg": {"image", "vision"},
	".png":  {"image", "vision"},
	".webp": {"image", "vision"},
	".wav":  {"audio", "audio"},
}

// mediaTypes are the sniffed content types accepted for each kind.
var mediaTypes = map[string][]string{
	"image": {"image/jpeg", "image/png", "image/webp"},
	"audio": {"audio/wave"},
}

// mediaRef is a path found in a prompt.
type mediaRef struct {
	start, end int    // its span in the prompt, quotes included
	path       string // as written, without quotes and escapes
	kind       string // "image" or "audio"
	capability string // what the model must report
}

// mediaKind returns the kind of a path's extension, "" for none.
func mediaKind(path string) (kind, capability string) {
	k, ok := mediaExts[strings.ToLower(filepath.Ext(path))]
	if !ok || len(filepath.Base(path)) <= len(filepath.Ext(path)) {
		return "", ""
	}
	return k.kind, k.capability
}

func isPathStart(s string) bool {
	return strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/")
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// findMediaPaths returns the attachable paths a prompt names, in order.
func findMediaPaths(s string) []mediaRef {
	var refs []mediaRef
	for i := 0; i < len(s); {
		if i > 0 && !isSpace(s[i-1]) && s[i-1] != '(' && s[i-1] != '[' {
			i++
			continue
		}
		if q := s[i]; q == '\'' || q == '"' {
			if j := strings.IndexByte(s[i+1:], q); j >= 0 {
				p := s[i+1 : i+1+j]
				if kind, capability := mediaKind(p); kind != "" && isPathStart(p) && !strings.ContainsAny(p, "\n\r") {
					refs = append(refs, mediaRef{start: i, end: i + j + 2, path: p, kind: kind, capability: capability})
					i += j + 2
					continue
				}
			}
			i++ // not a quoted path: scan its words
			continue
		}
		if !isPathStart(s[i:]) {
			i++
			continue
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			if s[j] == '\\' && j+1 < len(s) {
				j++
			}
			j++
		}
		end := j
		for end > i && strings.IndexByte(".,;:!?)]}'\"", s[end-1]) >= 0 && (end-2 < i || s[end-2] != '\\') {
			if k, _ := mediaKind(s[i:end]); k != "" {
				break
			}
			end--
		}
		p := unescapePath(s[i:end])
		if kind, capability := mediaKind(p); kind != "" && !strings.HasSuffix(s[i:end], `\`) {
			refs = append(refs, mediaRef{start: i, end: end, path: p, kind: kind, capability: capability})
		}
		i = j
	}
	return refs
}

// unescapePath drops the backslash of each escaped character, as a
// shell does: `my\ cat.png` is "my cat.png", `a\\b` is `a\b`.
func unescapePath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// attachment is a file read for a prompt.
type attachment struct {
	path, kind string
	data       []byte
}

// readMedia reads a file named in a prompt: a regular file of at most
// maxAttachBytes whose content is of its extension's kind.
func readMedia(ref mediaRef) ([]byte, error) {
	name := ref.path
	if strings.HasPrefix(name, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("%s '%s': %w", ref.kind, ref.path, err)
		}
		name = filepath.Join(home, name[2:])
	}
	fail := func(format string, a ...any) ([]byte, error) {
		return nil, fmt.Errorf("%s '%s' named in the prompt: %s", ref.kind, ref.path, fmt.Sprintf(format, a...))
	}
	f, err := os.Open(name)
	if errors.Is(err, os.ErrNotExist) {
		return fail("no such file (to send a path as text, write it in backticks)")
	}
	if err != nil {
		return fail("%v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fail("%v", err)
	}
	if !info.Mode().IsRegular() {
		return fail("not a regular file")
	}
	if info.Size() > maxAttachBytes {
		return fail("%d bytes, over the %d MiB a file may have", info.Size(), maxAttachBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxAttachBytes+1))
	if err != nil {
		return fail("%v", err)
	}
	if len(data) > maxAttachBytes {
		return fail("over the %d MiB a file may have", maxAttachBytes>>20)
	}
	if ct := http.DetectContentType(data); !slices.Contains(mediaTypes[ref.kind], ct) {
		want := "a JPEG, PNG or WebP image"
		if ref.kind == "audio" {
			want = "a WAV file"
		}
		return fail("not %s (its content is %s)", want, ct)
	}
	return data, nil
}

// capabilities returns the model's /api/show capabilities, asked once.
func (s *session) capabilities(ctx context.Context) ([]string, error) {
	if s.caps != nil {
		return s.caps, nil
	}
	resp, err := s.c.Show(ctx, &ollamaapi.ShowRequest{Model: s.model})
	if err != nil {
		return nil, err
	}
	s.caps = append([]string{}, resp.Capabilities...)
	return s.caps, nil
}

// attach finds the files a typed prompt names, checks that the model
// takes them and reads them: the prompt without their paths and the
// files base64-encoded, as the API's images. Nothing is printed or
// sent unless every file is attachable; then "Added image 'PATH'" is
// written to standard error for each.
func (s *session) attach(ctx context.Context, prompt string) (string, []string, error) {
	refs := findMediaPaths(prompt)
	if len(refs) == 0 {
		return prompt, nil, nil
	}
	caps, err := s.capabilities(ctx)
	if err != nil {
		return "", nil, err
	}
	var files []attachment
	for _, ref := range refs {
		if !slices.Contains(caps, ref.capability) {
			what := "images"
			if ref.kind == "audio" {
				what = "audio"
			}
			return "", nil, fmt.Errorf("model %q does not take %s (%q is not among its capabilities): %s '%s' named in the prompt (to send a path as text, write it in backticks)",
				s.model, what, ref.capability, ref.kind, ref.path)
		}
		data, err := readMedia(ref)
		if err != nil {
			return "", nil, err
		}
		files = append(files, attachment{path: ref.path, kind: ref.kind, data: data})
	}
	var text strings.Builder
	last := 0
	for _, ref := range refs {
		text.WriteString(prompt[last:ref.start])
		last = ref.end
	}
	text.WriteString(prompt[last:])
	images := make([]string, len(files))
	for i, f := range files {
		fmt.Fprintf(os.Stderr, "Added %s '%s'\n", f.kind, f.path)
		images[i] = base64.StdEncoding.EncodeToString(f.data)
	}
	return strings.TrimSpace(text.String()), images, nil
}

// explainTooLarge adds to a 413 answer to a request carrying files what
// they weighed: the server's --max-body counts them base64-encoded.
func explainTooLarge(err error, images []string) error {
	var se *client.StatusError
	if len(images) == 0 || !errors.As(err, &se) || se.StatusCode != http.StatusRequestEntityTooLarge {
		return err
	}
	n := 0
	for _, im := range images {
		n += len(im)
	}
	return fmt.Errorf("%w: the attached files take %d bytes base64-encoded, more than the server's body limit (tadpole serve --max-body, TADPOLE_MAX_BODY)", err, n)
}
