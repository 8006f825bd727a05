package responses

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/media"
)

// imageRef is how a stored item refers to an image the store keeps once
// per key (jobs.StoredImage): imageRef and the hex sha256 of its media
// type and bytes, in place of its data URL.
const imageRef = "tadpole-image:sha256:"

// storedItems is items as stored: each input_image's data URL replaced
// by a reference to the image, which is returned to be stored beside.
func storedItems(items []Item) ([]Item, []jobs.StoredImage) {
	var imgs []jobs.StoredImage
	out := make([]Item, len(items))
	for i, it := range items {
		out[i] = it
		if it.Type != "message" || !strings.Contains(string(it.Content), `"input_image"`) {
			continue
		}
		var ps []Part
		if json.Unmarshal(it.Content, &ps) != nil {
			continue
		}
		for j, p := range ps {
			if p.Type != "input_image" {
				continue
			}
			typ, data, err := media.ParseDataURL(p.ImageURL)
			if err != nil {
				continue // checked when it came in; kept as it is
			}
			h := sha256.New()
			h.Write([]byte(typ))
			h.Write([]byte{0})
			h.Write(data)
			sum := hex.EncodeToString(h.Sum(nil))
			imgs = append(imgs, jobs.StoredImage{Hash: sum, MIME: typ, Data: data})
			ps[j].ImageURL = imageRef + sum
		}
		out[i].Content, _ = json.Marshal(ps)
	}
	return out, imgs
}

// imageHashes adds the images stored items (JSON) refer to.
func imageHashes(raw []byte, hashes map[string]bool) {
	if !strings.Contains(string(raw), imageRef) {
		return
	}
	var items []Item
	if json.Unmarshal(raw, &items) != nil {
		return
	}
	for _, it := range items {
		var ps []Part
		if it.Type != "message" || json.Unmarshal(it.Content, &ps) != nil {
			continue
		}
		for _, p := range ps {
			if h, ok := strings.CutPrefix(p.ImageURL, imageRef); ok && p.Type == "input_image" {
				hashes[h] = true
			}
		}
	}
}

// restore reads stored items (JSON), their image references made data
// URLs again from imgs.
func restore(raw []byte, imgs map[string]jobs.StoredImage) ([]Item, error) {
	var items []Item
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	for i, it := range items {
		if it.Type != "message" || !strings.Contains(string(it.Content), imageRef) {
			continue
		}
		var ps []Part
		if err := json.Unmarshal(it.Content, &ps); err != nil {
			return nil, err
		}
		for j, p := range ps {
			h, ok := strings.CutPrefix(p.ImageURL, imageRef)
			if p.Type != "input_image" || !ok {
				continue
			}
			im, ok := imgs[h]
			if !ok {
				return nil, fmt.Errorf("stored image %s is missing", h)
			}
			ps[j].ImageURL = "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
		}
		items[i].Content, _ = json.Marshal(ps)
	}
	return items, nil
}

// images reads the images stored rows refer to.
func (h *Handler) images(ctx context.Context, owner string, raws ...[]byte) (map[string]jobs.StoredImage, error) {
	set := map[string]bool{}
	for _, raw := range raws {
		imageHashes(raw, set)
	}
	if len(set) == 0 {
		return nil, nil
	}
	hashes := make([]string, 0, len(set))
	for h := range set {
		hashes = append(hashes, h)
	}
	return h.Jobs.ResponseImages(ctx, owner, hashes)
}

// conversation is what a chain of stored responses (oldest first) leaves
// to continue from: each one's earlier conversation (responses stored
// whole before chains), input and output. The last must have completed.
func (h *Handler) conversation(ctx context.Context, chain []*jobs.StoredResponse) ([]Item, error) {
	if len(chain) == 0 {
		return nil, nil
	}
	var raws [][]byte
	for _, r := range chain {
		raws = append(raws, r.Context, r.Input)
	}
	imgs, err := h.images(ctx, chain[0].Owner, raws...)
	if err != nil {
		return nil, err
	}
	var out []Item
	for i, r := range chain {
		hist, err := restore(orArray(r.Context), imgs)
		if err != nil {
			return nil, err
		}
		in, err := restore(orArray(r.Input), imgs)
		if err != nil {
			return nil, err
		}
		var body struct {
			Status string            `json:"status"`
			Output []json.RawMessage `json:"output"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			return nil, err
		}
		if i == len(chain)-1 && body.Status != "completed" && body.Status != "incomplete" {
			return nil, fmt.Errorf("it is %s", body.Status)
		}
		out = append(append(out, hist...), in...)
		for _, raw := range body.Output {
			var it Item
			if err := json.Unmarshal(raw, &it); err != nil {
				return nil, err
			}
			out = append(out, it)
		}
	}
	return out, nil
}

func orArray(b []byte) []byte {
	if len(b) == 0 {
		return []byte("[]")
	}
	return b
}

// record is the response as stored: its own input items (images apart),
// its request without the input, and the response it continues.
func (a *answer) record(status string, body []byte) *jobs.StoredResponse {
	req := *a.p.req
	req.Input = nil // the items are stored as Input
	reqJS, _ := json.Marshal(&req)
	items, imgs := storedItems(a.p.input)
	in, _ := json.Marshal(items)
	if in == nil || string(in) == "null" {
		in = []byte("[]")
	}
	return &jobs.StoredResponse{
		ID: a.id, Owner: a.owner, Status: status, Prev: a.p.req.PreviousResponseID, Body: body, Request: reqJS, Input: in,
		Context: []byte("[]"), Images: imgs,
	}
}

// storeError maps the refusals of the response store: a response too
// large or over its key's quota is a 400 naming the limit, a disk below
// --min-free-disk a 507.
func storeError(err error) error {
	switch {
	case errors.Is(err, jobs.ErrResponseTooLarge):
		e := invalid("input", "%v.", err)
		e.Code = "stored_response_too_large"
		e.Err = err
		return e
	case errors.Is(err, jobs.ErrResponseQuota):
		e := invalid("store", "%v.", err)
		e.Code = "storage_quota_exceeded"
		e.Err = err
		return e
	case errors.Is(err, jobs.ErrDiskLow):
		e := dialect.Errorf(http.StatusInsufficientStorage, "The response cannot be stored: %v; send store: false.", err)
		e.Code = "insufficient_storage"
		e.Err = err
		return e
	}
	return internal(err)
}
