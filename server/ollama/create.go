package ollama

import (
	"errors"
	"net/http"
	"sort"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/models/quantize"
	"github.com/tadpole-llm/tadpole/models/registry"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// create builds a model from Ollama's create fields or a whole Modelfile
// (`modelfile`, Tadpole's extra). Files come as blob digests uploaded with
// POST /api/blobs: FROM and ADAPTER name a model of the store or a blob,
// never a path on the server.
func (h *Handler) create(c echo.Context) error {
	var req ollamaapi.CreateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	name := firstNonEmpty(req.Model, req.Name)
	if name == "" {
		return errorf(http.StatusBadRequest, "model is required")
	}
	if _, err := models.ParseName(name); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	c.Set("model", name)
	mf, err := modelfileOf(&req)
	if err != nil {
		return err
	}
	if req.Modelfile == "" && req.From == "" {
		h.modelFirst(mf)
	}
	if err := h.checkGGUFs(mf); err != nil {
		return err
	}
	for _, cmd := range mf.Commands {
		if cmd.Name != models.CmdFrom && cmd.Name != models.CmdAdapter && cmd.Name != models.CmdDraft {
			continue
		}
		if blobOnly := cmd.Name != models.CmdFrom; !h.storeReference(cmd.Value, blobOnly) {
			what := "a model name or the digest"
			if blobOnly {
				what = "the digest"
			}
			return errorf(http.StatusBadRequest, "%s %q: give %s of a blob uploaded with POST /api/blobs/:digest (\"@sha256:…\"); server paths are not read", strings.ToUpper(cmd.Name), cmd.Value, what)
		}
	}
	if err := mf.Validate(); err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	if req.Quantize != "" {
		if err := quantize.CheckType(req.Quantize); err != nil {
			return quantizeError(name, err)
		}
		// One quantization at a time: it takes every core for minutes.
		done, err := quantize.Begin()
		if err != nil {
			return quantizeError(name, err)
		}
		defer done()
	}
	return streamProgress(c, req.Stream, func(progress func(ollamaapi.ProgressResponse)) error {
		status := func(s string) { progress(ollamaapi.ProgressResponse{Status: s}) }
		if req.Quantize != "" {
			if err := quantize.From(h.Store, mf, req.Quantize, status); err != nil {
				return quantizeError(name, err)
			}
		}
		if err := h.Store.Create(name, mf, status); err != nil {
			if errors.Is(err, models.ErrInvalidModel) {
				return errorf(http.StatusBadRequest, "%v", err)
			}
			return storeError(name, err)
		}
		status("success")
		return nil
	})
}

// checkGGUFs refuses a FROM or ADAPTER whose blob or model is a GGUF
// llama.cpp cannot load (see models.CheckGGUF) with a 400 naming the key,
// before any progress is streamed: a streamed create has already sent
// its 200. Store.Create checks again, for what a Modelfile imports.
func (h *Handler) checkGGUFs(mf *models.Modelfile) error {
	first := true
	basePath, baseName := "", "" // the first FROM's file and name, for the ADAPTER lines' check
	for _, cmd := range mf.Commands {
		if cmd.Name != models.CmdFrom && cmd.Name != models.CmdAdapter {
			continue
		}
		base := first && cmd.Name == models.CmdFrom
		if base {
			first = false
			baseName = cmd.Value
			if e, err := h.Store.Resolve(cmd.Value); err == nil {
				basePath = e.Path
			}
		}
		var err error
		if d := strings.TrimPrefix(cmd.Value, "@"); models.ValidDigest(d) {
			if !h.Store.HasBlob(d) {
				continue // storeReference says so
			}
			err = h.Store.CheckBlob(d)
			if p, perr := h.Store.BlobPath(d); err == nil && perr == nil && base {
				basePath = p
			}
			if p, perr := h.Store.BlobPath(d); err == nil && perr == nil && cmd.Name == models.CmdAdapter && basePath != "" {
				// An adapter for another base: refused before the stream
				// starts, naming both (Store.Create checks again).
				af, aerr := gguf.Open(p)
				bf, berr := gguf.Open(basePath)
				if aerr == nil && berr == nil {
					if _, cerr := gguf.CheckAdapter(af, bf); cerr != nil {
						return errorf(http.StatusBadRequest, "ADAPTER %s: the LoRA adapter does not fit the base model (FROM %s, %s): %v", cmd.Value, baseName, bf.Architecture(), cerr)
					}
				}
			}
			if p, perr := h.Store.BlobPath(d); err == nil && perr == nil && base {
				// An architecture the engine does not know: refused now,
				// not at first use.
				if f, ferr := gguf.Open(p); ferr == nil && f.IsModel() {
					if ae := infer.UnsupportedArchitecture(p); ae != nil {
						return errorf(http.StatusBadRequest, "FROM %s: %v", cmd.Value, ae)
					}
				}
				// A projector or adapter cannot be the model.
				if f, ferr := gguf.Open(p); ferr == nil && !f.IsModel() {
					typ, _ := f.String("general.type")
					if typ == "" || typ == "model" {
						typ = f.Architecture()
					}
					return errorf(http.StatusBadRequest, "FROM %s: the first FROM must be a language model, and this GGUF is a %s (a projector or adapter comes after its model)", cmd.Value, typ)
				}
			}
		} else {
			_, err = h.Store.Resolve(cmd.Value)
		}
		if errors.Is(err, models.ErrInvalidModel) {
			return errorf(http.StatusBadRequest, "%s %s: %v", strings.ToUpper(cmd.Name), cmd.Value, h.Store.Redact(err))
		}
	}
	return nil
}

// modelfileOf builds the Modelfile of a create request.
func modelfileOf(req *ollamaapi.CreateRequest) (*models.Modelfile, error) {
	if req.Modelfile != "" {
		mf, err := models.ParseModelfile(strings.NewReader(req.Modelfile))
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "%v", err)
		}
		return mf, nil
	}
	mf := &models.Modelfile{}
	add := func(name, key, value string) {
		mf.Commands = append(mf.Commands, models.Command{Name: name, Key: key, Value: value})
	}
	switch {
	case req.From != "":
		add(models.CmdFrom, "", req.From)
	case len(req.Files) > 0:
		for _, d := range sortedValues(req.Files) {
			add(models.CmdFrom, "", "@"+d)
		}
	default:
		return nil, errorf(http.StatusBadRequest, "from or files is required")
	}
	for _, d := range sortedValues(req.Adapters) {
		add(models.CmdAdapter, "", "@"+d)
	}
	if req.Template != "" {
		add(models.CmdTemplate, "", req.Template)
	}
	if req.System != "" {
		add(models.CmdSystem, "", req.System)
	}
	params, err := models.ParamCommands(req.Parameters)
	if err != nil {
		return nil, errorf(http.StatusBadRequest, "%v", err)
	}
	mf.Commands = append(mf.Commands, params...)
	switch l := req.License.(type) {
	case nil:
	case string:
		add(models.CmdLicense, "", l)
	case []any:
		for _, x := range l {
			s, ok := x.(string)
			if !ok {
				return nil, errorf(http.StatusBadRequest, "license: want a string or a list of strings")
			}
			add(models.CmdLicense, "", s)
		}
	default:
		return nil, errorf(http.StatusBadRequest, "license: want a string or a list of strings")
	}
	for _, m := range req.Messages {
		add(models.CmdMessage, m.Role, m.Content)
	}
	return mf, nil
}

// modelFirst puts first, among a create's files (FROM blobs), the one
// that is a language model, so that the others (a projector: Ollama
// sends a vision model as {"model.gguf": …, "mmproj.gguf": …}) are
// added to it, whatever their names' order.
func (h *Handler) modelFirst(mf *models.Modelfile) {
	var froms []int
	for i, c := range mf.Commands {
		if c.Name == models.CmdFrom {
			froms = append(froms, i)
		}
	}
	for _, i := range froms {
		p, err := h.Store.BlobPath(strings.TrimPrefix(mf.Commands[i].Value, "@"))
		if err != nil {
			continue
		}
		if f, err := gguf.Open(p); err == nil && f.IsModel() {
			first := froms[0]
			mf.Commands[first], mf.Commands[i] = mf.Commands[i], mf.Commands[first]
			return
		}
	}
}

func sortedValues(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(m))
	for _, k := range keys {
		out = append(out, m[k])
	}
	return out
}

// storeReference reports whether a FROM/ADAPTER value names something in
// the store: a blob digest, or (FROM only) a model.
func (h *Handler) storeReference(v string, blobOnly bool) bool {
	d := strings.TrimPrefix(v, "@")
	if models.ValidDigest(d) {
		return h.Store.HasBlob(d)
	}
	if blobOnly || strings.HasPrefix(v, ".") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasSuffix(strings.ToLower(v), ".gguf") {
		return false
	}
	_, err := h.Store.Resolve(v)
	return err == nil
}

// quantizeError maps a quantization's errors: another one running is a
// 503 to retry, the request's own fault a 400, the store's as the store's.
func quantizeError(name string, err error) error {
	var qe *quantize.Error
	switch {
	case errors.Is(err, quantize.ErrBusy):
		return dialect.Unavailable("%v", err)
	case errors.As(err, &qe):
		return errorf(http.StatusBadRequest, "%v", err)
	}
	return storeError(name, err)
}

func (h *Handler) pull(c echo.Context) error { return h.transfer(c, false) }
func (h *Handler) push(c echo.Context) error { return h.transfer(c, true) }

// transfer pulls a model from or pushes it to its registry.
func (h *Handler) transfer(c echo.Context, push bool) error {
	var req ollamaapi.PullRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	name := firstNonEmpty(req.Model, req.Name)
	n, err := models.ParseName(name)
	if err != nil {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	c.Set("model", name)
	client := &registry.Client{Insecure: req.Insecure, Allow: h.AllowRegistries}
	return streamProgress(c, req.Stream, func(progress func(ollamaapi.ProgressResponse)) error {
		report := func(p registry.Progress) {
			progress(ollamaapi.ProgressResponse{Status: p.Status, Digest: p.Digest, Total: p.Total, Completed: p.Completed})
		}
		var err error
		if push {
			err = client.Push(c.Request().Context(), h.Store, n, report)
		} else {
			err = client.Pull(c.Request().Context(), h.Store, n, report)
		}
		if err != nil {
			return transferError(err)
		}
		return nil
	})
}

// transferError maps a pull's or push's error to a status: the registry
// lacks the model (404), the operator does not allow the registry's
// address (403), the store's limits (413, 507), the registry failed
// (502), or this server did (500). The message never carries what the
// registry sent, only its host and status.
func transferError(err error) error {
	switch {
	case errors.Is(err, registry.ErrNotFound):
		return errorf(http.StatusNotFound, "%v", err)
	case errors.Is(err, models.ErrNotFound):
		// A push of a model with no manifest here (e.g. a bare .gguf in
		// the models directory): the client named something to push that
		// the store does not hold as a pushable model.
		return errorf(http.StatusNotFound, "%v (only models with a manifest, e.g. pulled or created ones, can be pushed)", err)
	case errors.Is(err, registry.ErrEgress):
		return errorf(http.StatusForbidden, "%v", err)
	case errors.Is(err, registry.ErrRemote):
		return errorf(http.StatusBadGateway, "%v", err)
	case errors.Is(err, models.ErrBlobTooLarge), errors.Is(err, models.ErrInsufficientStorage), errors.Is(err, syscall.ENOSPC):
		return storeError("", err)
	}
	return errorf(http.StatusInternalServerError, "%v", err)
}
