package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tadpole-llm/tadpole/server/client"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

var createCmd = &command{
	name: "create", args: "MODEL", short: "create a model from a Modelfile",
	long: "FROM (and ADAPTER, DRAFT) may name a model the server has or a local GGUF\n" +
		"file; a relative path is relative to the Modelfile. A local file is\n" +
		"uploaded to the server as a blob first (skipped when the server already\n" +
		"has it), so this works with a remote server too.\n\n" +
		"Example Modelfile:\n" +
		"  FROM ./model.gguf\n" +
		"  PARAMETER temperature 0.7\n" +
		"  SYSTEM \"\"\"You are a helpful assistant.\"\"\"",
	minArgs: 1, maxArgs: 1,
	setup: func(fs *pflag.FlagSet) func(context.Context, []string) error {
		file := fs.StringP("file", "f", "Modelfile", "the Modelfile (- for standard input)")
		quantize := fs.StringP("quantize", "q", "", "quantize the model's weights to this type (e.g. q4_0, q8_0)")
		return func(ctx context.Context, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			text, dir, err := readModelfile(*file)
			if err != nil {
				return err
			}
			p := newProgress(os.Stderr)
			defer p.done()
			text, err = uploadLocalFiles(ctx, c, text, dir, p)
			if err != nil {
				return err
			}
			return c.Create(ctx, &ollamaapi.CreateRequest{Model: args[0], Modelfile: text, Quantize: *quantize}, p.update)
		}
	},
}

// readModelfile reads the Modelfile at path (- for stdin) and returns its
// text and the directory its relative paths start from.
func readModelfile(path string) (text, dir string, err error) {
	var b []byte
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
		dir, _ = os.Getwd()
	} else {
		b, err = os.ReadFile(path)
		dir = filepath.Dir(path)
	}
	if err != nil {
		return "", "", fmt.Errorf("read Modelfile: %w", err)
	}
	return string(b), dir, nil
}

// fileRef is a FROM, ADAPTER or DRAFT line of a Modelfile that names a local
// file.
type fileRef struct {
	line int    // index in the Modelfile's lines
	verb string // FROM, ADAPTER or DRAFT, as written
	path string // absolute
}

// localFiles finds the FROM, ADAPTER and DRAFT lines that name local files,
// relative to dir. A value that looks like a path ("./x", "../x", "/x",
// "~/x", "x.gguf") but names no file is an error; any other value that
// names no file is a model name ("llama3.2", "hf.co/user/repo:Q4_0"),
// left to the server.
func localFiles(text, dir string) ([]fileRef, error) {
	var refs []fileRef
	inQuotes := false
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if inQuotes {
			inQuotes = strings.Count(trimmed, `"""`)%2 == 0
			continue
		}
		if strings.Count(trimmed, `"""`)%2 == 1 {
			inQuotes = true
			continue
		}
		verb, value := trimmed, ""
		if i := strings.IndexAny(trimmed, " \t"); i >= 0 {
			verb, value = trimmed[:i], trimmed[i+1:]
		}
		if !strings.EqualFold(verb, "FROM") && !strings.EqualFold(verb, "ADAPTER") && !strings.EqualFold(verb, "DRAFT") {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if value == "" || strings.HasPrefix(value, "@") {
			continue
		}
		p := value
		if strings.HasPrefix(p, "~/") {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, err
			}
			p = filepath.Join(home, p[2:])
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		looksLikePath := filepath.IsAbs(value) || strings.HasPrefix(value, ".") || strings.HasPrefix(value, "~") ||
			strings.HasSuffix(strings.ToLower(value), ".gguf")
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil, fmt.Errorf("%s %s: a directory; give a GGUF file", verb, value)
		case err == nil:
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, err
			}
			refs = append(refs, fileRef{line: i, verb: verb, path: abs})
		case looksLikePath:
			return nil, fmt.Errorf("%s %s: %w", verb, value, err)
		}
	}
	return refs, nil
}

// uploadLocalFiles uploads the files of the Modelfile's FROM and ADAPTER
// lines that the server lacks, and rewrites those lines to
// "FROM @sha256:<hex>".
func uploadLocalFiles(ctx context.Context, c *client.Client, text, dir string, p *progress) (string, error) {
	refs, err := localFiles(text, dir)
	if err != nil || len(refs) == 0 {
		return text, err
	}
	lines := strings.Split(text, "\n")
	for _, r := range refs {
		digest, err := uploadBlob(ctx, c, r.path, p)
		if err != nil {
			return "", err
		}
		lines[r.line] = r.verb + " @" + digest
	}
	return strings.Join(lines, "\n"), nil
}

// uploadBlob hashes a file and uploads it unless the server has it.
func uploadBlob(ctx context.Context, c *client.Client, path string, p *progress) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	size := fi.Size()
	name := filepath.Base(path)
	h := sha256.New()
	report := func(status, key string) func(int64) {
		return func(n int64) {
			_ = p.update(ollamaapi.ProgressResponse{Status: status, Digest: key, Total: size, Completed: n})
		}
	}
	if size > 0 {
		report("hashing "+name, "file:"+path)(0)
	}
	if _, err := io.Copy(h, &countingReader{r: f, report: report("hashing "+name, "file:"+path)}); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	has, err := c.HasBlob(ctx, digest)
	if err != nil {
		return "", fmt.Errorf("check blob %s: %w", digest, err)
	}
	if has {
		_ = p.update(ollamaapi.ProgressResponse{Status: "using existing blob " + shortDigest(digest) + " for " + name})
		return digest, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	status := "copying " + name + " (" + shortDigest(digest) + ")"
	if size > 0 {
		report(status, digest)(0)
	}
	if err := c.CreateBlob(ctx, digest, &countingReader{r: f, report: report(status, digest)}, size); err != nil {
		return "", fmt.Errorf("upload %s: %w", path, err)
	}
	p.done()
	return digest, nil
}
