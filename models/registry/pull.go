package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"syscall"
	"time"

	"github.com/tadpole-llm/tadpole/models"
)

var digestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// Pull downloads a model's manifest and every blob the store lacks, then
// writes the manifest. An interrupted download keeps its partial blob and
// the next Pull resumes it; a blob whose sha256 does not match is removed
// and never enters the store.
func (c *Client) Pull(ctx context.Context, st Store, name models.Name, progress func(Progress)) error {
	if progress == nil {
		progress = func(Progress) {}
	}
	n := name // ParseName fills in the default host and namespace
	progress(Progress{Status: "pulling manifest"})
	resp, err := c.do(ctx, n, http.MethodGet, c.url(n, "manifests", n.Tag), http.Header{"Accept": {models.MediaTypeManifest}}, nil)
	if err != nil {
		return fmt.Errorf("pull %s: %w", name, err)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("pull %s: manifest: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		return statusError(resp, "pull "+name.String())
	}
	var m models.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("pull %s: %s sent a manifest that is not valid JSON: %w", name, n.Host, ErrRemote)
	}
	layers := m.Layers
	if m.Config.Digest != "" {
		layers = append([]models.Layer{m.Config}, layers...)
	}
	for i, l := range layers {
		if !digestRe.MatchString(l.Digest) || l.Size < 0 {
			return fmt.Errorf("pull %s: %s sent a manifest whose layer %d has an invalid digest or size: %w", name, n.Host, i, ErrRemote)
		}
	}
	var missing []int64
	for _, l := range layers {
		if !st.HasBlob(l.Digest) {
			missing = append(missing, l.Size)
		}
	}
	if err := st.CheckCapacity(missing...); err != nil {
		return fmt.Errorf("pull %s: %w", name, err)
	}
	for _, l := range layers {
		if err := c.fetchBlob(ctx, st, n, l, progress); err != nil {
			return fmt.Errorf("pull %s: %w", name, err)
		}
	}
	if err := checkGGUFLayers(st, m.Layers); err != nil {
		return fmt.Errorf("pull %s: %s sent %w: %w", name, n.Host, err, ErrRemote)
	}
	progress(Progress{Status: "writing manifest"})
	if err := st.WriteManifest(name, raw); err != nil {
		return fmt.Errorf("pull %s: %w", name, err)
	}
	progress(Progress{Status: "success"})
	return nil
}

// fetchBlob downloads one blob in ranged chunks into "<blob>-partial",
// resuming what an earlier attempt left, and moves it into place once its
// digest checks out.
func (c *Client) fetchBlob(ctx context.Context, st Store, n models.Name, l models.Layer, progress func(Progress)) error {
	status := "pulling " + l.Digest[7:19]
	if st.HasBlob(l.Digest) {
		progress(Progress{Status: status, Digest: l.Digest, Total: l.Size, Completed: l.Size})
		return nil
	}
	path, err := st.BlobPath(l.Digest)
	if err != nil {
		return err
	}
	partial := path + "-partial"
	f, err := os.OpenFile(partial, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	have, err := io.Copy(h, f) // hash what an earlier attempt left
	if err != nil {
		return err
	}
	if have > l.Size {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		h.Reset()
		have = 0
	}
	chunk := c.ChunkSize
	if chunk <= 0 {
		chunk = 64 << 20
	}
	progress(Progress{Status: status, Digest: l.Digest, Total: l.Size, Completed: have})
	failures := 0
	for have < l.Size {
		end := min(have+chunk, l.Size) - 1
		got, err := c.fetchRange(ctx, n, l.Digest, have, end, io.MultiWriter(f, h))
		have += got
		if err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				err = fmt.Errorf("%w: %w", models.ErrInsufficientStorage, err)
			}
			if ctx.Err() != nil || failures >= 4 || errors.Is(err, syscall.ENOSPC) || errors.Is(err, ErrEgress) {
				return fmt.Errorf("download %s (kept %d of %d bytes to resume): %w", l.Digest, have, l.Size, err)
			}
			failures++
			select {
			case <-time.After(time.Duration(failures) * 200 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		failures = 0
		progress(Progress{Status: status, Digest: l.Digest, Total: l.Size, Completed: have})
	}
	progress(Progress{Status: "verifying sha256 digest", Digest: l.Digest, Total: l.Size, Completed: l.Size})
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != l.Digest {
		f.Close()
		os.Remove(partial)
		return fmt.Errorf("blob %s: downloaded data has digest %s; discarded", l.Digest, got)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	f.Close()
	return os.Rename(partial, path)
}

// fetchRange appends bytes [from, to] of a blob to w and returns how many
// arrived, even when it fails part way.
func (c *Client) fetchRange(ctx context.Context, n models.Name, digest string, from, to int64, w io.Writer) (int64, error) {
	hdr := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", from, to)}}
	resp, err := c.do(ctx, n, http.MethodGet, c.url(n, "blobs", digest), hdr, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	want := to - from + 1
	switch resp.StatusCode {
	case http.StatusPartialContent:
	case http.StatusOK:
		// No range support: skip what we have.
		if _, err := io.CopyN(io.Discard, resp.Body, from); err != nil {
			return 0, err
		}
	default:
		return 0, statusError(resp, "blob "+digest)
	}
	got, err := io.Copy(w, io.LimitReader(resp.Body, want))
	if err == nil && got < want {
		err = io.ErrUnexpectedEOF
	}
	return got, err
}

// checkGGUFLayers validates the GGUF layers of a pulled manifest before it
// is written, so a model llama.cpp cannot load never enters the store
// (the error wraps [models.ErrInvalidModel] and names the key). Its
// verified blobs stay, unreferenced, like those of an interrupted pull.
func checkGGUFLayers(st Store, layers []models.Layer) error {
	for _, l := range layers {
		switch l.MediaType {
		case models.MediaTypeModel, models.MediaTypeAdapter, models.MediaTypeProjector:
		default:
			continue
		}
		p, err := st.BlobPath(l.Digest)
		if err != nil {
			return err
		}
		if _, err := models.CheckGGUF(p); err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	return nil
}
