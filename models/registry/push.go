package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/tadpole-llm/tadpole/models"
)

// Push uploads a model's blobs the registry lacks, then its manifest.
func (c *Client) Push(ctx context.Context, st Store, name models.Name, progress func(Progress)) error {
	if progress == nil {
		progress = func(Progress) {}
	}
	n := name // ParseName fills in the default host and namespace
	progress(Progress{Status: "retrieving manifest"})
	raw, err := st.ReadManifest(name)
	if err != nil {
		return fmt.Errorf("push %s: %w", name, err)
	}
	var m models.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("push %s: invalid manifest: %w", name, err)
	}
	layers := m.Layers
	if m.Config.Digest != "" {
		layers = append([]models.Layer{m.Config}, layers...)
	}
	for _, l := range layers {
		if err := c.pushBlob(ctx, st, n, l, progress); err != nil {
			return fmt.Errorf("push %s: %w", name, err)
		}
	}
	progress(Progress{Status: "pushing manifest"})
	resp, err := c.do(ctx, n, http.MethodPut, c.url(n, "manifests", n.Tag),
		http.Header{"Content-Type": {models.MediaTypeManifest}}, func() io.Reader { return bytes.NewReader(raw) })
	if err != nil {
		return fmt.Errorf("push %s: manifest: %w", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return statusError(resp, "push "+name.String()+" manifest")
	}
	progress(Progress{Status: "success"})
	return nil
}

func (c *Client) pushBlob(ctx context.Context, st Store, n models.Name, l models.Layer, progress func(Progress)) error {
	status := "pushing " + l.Digest[7:19]
	resp, err := c.do(ctx, n, http.MethodHead, c.url(n, "blobs", l.Digest), nil, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		progress(Progress{Status: status, Digest: l.Digest, Total: l.Size, Completed: l.Size})
		return nil
	}
	resp, err = c.do(ctx, n, http.MethodPost, c.url(n, "blobs", "uploads/"), nil, nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return statusError(resp, "start upload of "+l.Digest)
	}
	loc, err := resp.Location()
	if err != nil {
		return fmt.Errorf("upload of %s: %s answered without a usable Location: %w", l.Digest, n.Host, ErrRemote)
	}
	if err := c.checkHop(resp.Request.URL, loc); err != nil {
		return fmt.Errorf("upload of %s: %w", l.Digest, err)
	}
	q := loc.Query()
	q.Set("digest", l.Digest)
	loc.RawQuery = q.Encode()
	path, err := st.BlobPath(l.Digest)
	if err != nil {
		return err
	}
	progress(Progress{Status: status, Digest: l.Digest, Total: l.Size})
	resp, err = c.do(ctx, n, http.MethodPut, loc.String(), http.Header{"Content-Type": {"application/octet-stream"}}, func() io.Reader {
		f, err := os.Open(path)
		if err != nil {
			return &errReader{err}
		}
		return &closingReader{f}
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return statusError(resp, "upload of "+l.Digest)
	}
	progress(Progress{Status: status, Digest: l.Digest, Total: l.Size, Completed: l.Size})
	return nil
}

// closingReader closes the file at EOF (http.Request closes io.Closer
// bodies too; this covers readers it does not see as one).
type closingReader struct{ f *os.File }

func (r *closingReader) Read(p []byte) (int, error) { return r.f.Read(p) }
func (r *closingReader) Close() error               { return r.f.Close() }

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }
