package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/gguf"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// apiDetails converts the store's details to the wire type.
func apiDetails(d models.Details) ollamaapi.ModelDetails {
	fam := d.Families
	if fam == nil && d.Family != "" {
		fam = []string{d.Family}
	}
	return ollamaapi.ModelDetails{
		ParentModel: d.ParentModel, Format: d.Format, Family: d.Family, Families: fam,
		ParameterSize: d.ParameterSize, QuantizationLevel: d.QuantizationLevel,
	}
}

func (h *Handler) tags(c echo.Context) error {
	entries, err := h.Store.List()
	if err != nil {
		return errorf(http.StatusInternalServerError, "%v", err)
	}
	resp := ollamaapi.ListResponse{Models: []ollamaapi.ListModel{}}
	for _, e := range entries {
		resp.Models = append(resp.Models, ollamaapi.ListModel{
			Name: e.Name.String(), Model: e.Name.String(), ModifiedAt: e.Modified, Size: e.Size,
			Digest: e.Digest, Details: apiDetails(e.Details),
		})
	}
	return c.JSON(http.StatusOK, resp)
}

// storeError maps store errors to Ollama's status codes.
func storeError(name string, err error) error {
	switch {
	case errors.Is(err, models.ErrNotFound):
		return errorf(http.StatusNotFound, "model %q not found", name)
	case errors.Is(err, models.ErrDigestMismatch), errors.Is(err, models.ErrInvalidDigest):
		return errorf(http.StatusBadRequest, "%v", err)
	case errors.Is(err, models.ErrBlobTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, "%v", err)
	case errors.Is(err, models.ErrInsufficientStorage), errors.Is(err, syscall.ENOSPC):
		return errorf(http.StatusInsufficientStorage, "%v", err)
	}
	var pe *models.ParseError
	if errors.As(err, &pe) {
		return errorf(http.StatusBadRequest, "%v", err)
	}
	return errorf(http.StatusInternalServerError, "%v", err)
}

func (h *Handler) show(c echo.Context) error {
	var req ollamaapi.ShowRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	name := firstNonEmpty(req.Model, req.Name)
	if name == "" {
		return errorf(http.StatusBadRequest, "model is required")
	}
	c.Set("model", name)
	if err := checkName("model", name); err != nil {
		return err
	}
	e, err := h.Store.Resolve(name)
	if err != nil {
		if errors.Is(err, models.ErrNotFound) {
			return errorf(http.StatusNotFound, "model %q not found", name)
		}
		return errorf(http.StatusBadRequest, "%v", err)
	}
	f, err := gguf.Open(e.Path)
	if err != nil {
		return showFileError(name, err)
	}
	resp := ollamaapi.ShowResponse{
		License: strings.Join(e.License, "\n"), Modelfile: models.ModelfileFor(e), Template: e.Template,
		System: e.System, Details: apiDetails(e.Details), ModelInfo: modelInfo(f, req.Verbose),
		Capabilities: []string{"completion"}, ModifiedAt: e.Modified,
	}
	jinja, _ := f.String("tokenizer.chat_template")
	toolUse, _ := f.String("tokenizer.chat_template.tool_use")
	if resp.Template == "" {
		resp.Template = jinja
	}
	if resp.Template == "" {
		// Ollama's default for a model without a template: the bare
		// prompt, which is also what /api/generate sends such a model.
		resp.Template = "{{ .Prompt }}"
	}
	resp.Capabilities = append(resp.Capabilities, infer.TemplateCapabilities(e.Template, jinja, toolUse)...)
	if _, ok := f.Uint("tokenizer.ggml.fim_pre_token_id"); ok {
		resp.Capabilities = append(resp.Capabilities, "insert")
	}
	if infer.IsReranker(f) {
		// A cross-encoder scores pairs (/api/rerank, /v1/rerank); it
		// neither completes text nor embeds it (as Ollama lists only
		// "embedding" for an embedding model).
		resp.Capabilities = []string{"rerank"}
	}
	if proj := e.Projector(); proj != "" {
		// "vision" and "audio" as Ollama lists them, from what the
		// projector says it encodes.
		pi, err := models.ReadProjector(proj)
		if err != nil {
			return showFileError(name, err)
		}
		resp.ProjectorInfo = pi.KV
		if pi.Vision {
			resp.Capabilities = append(resp.Capabilities, "vision")
		}
		if pi.Audio {
			resp.Capabilities = append(resp.Capabilities, "audio")
		}
	}
	for _, m := range e.Messages {
		resp.Messages = append(resp.Messages, ollamaapi.Message{Role: m.Role, Content: m.Content})
	}
	resp.Parameters = parametersText(e.Params)
	return c.JSON(http.StatusOK, resp)
}

// modelInfo is every GGUF key/value; long arrays (the vocabulary, merges,
// scores) are null unless verbose, as Ollama does.
func modelInfo(f *gguf.File, verbose bool) map[string]any {
	info := map[string]any{"general.parameter_count": f.ParameterCount()}
	for _, kv := range f.KVs {
		if !verbose && strings.HasPrefix(kv.Key, "tokenizer.ggml.") && isSlice(kv.Value) {
			info[kv.Key] = nil
			continue
		}
		info[kv.Key] = kv.Value
	}
	return info
}

func isSlice(v any) bool {
	switch v.(type) {
	case []string, []float32, []int32, []uint32, []int64, []uint64, []float64, []uint8, []int8, []int16, []uint16, []bool, []any:
		return true
	}
	return false
}

// parametersText renders the model's parameters as Ollama's show does:
// one "name value" line each, list values repeated.
func parametersText(params map[string]any) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		_, list := params[k].([]string)
		_, str := params[k].(string)
		for _, v := range models.FormatOption(params[k]) {
			if list || str || strings.ContainsAny(v, " \t\"") {
				v = strconv.Quote(v) // Ollama quotes string values
			}
			fmt.Fprintf(&sb, "%-30s %s\n", k, v)
		}
	}
	return sb.String()
}

// checkName answers 400 for a name that is not a valid model name
// ("../../evil", "a/b/c/d"): the client's mistake, named with its field.
func checkName(field, name string) error {
	if _, err := models.ParseName(name); err != nil {
		return errorf(http.StatusBadRequest, "%s: %v", field, err)
	}
	return nil
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func (h *Handler) copyModel(c echo.Context) error {
	var req ollamaapi.CopyRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Source == "" || req.Destination == "" {
		return errorf(http.StatusBadRequest, "source and destination are required")
	}
	if err := checkName("source", req.Source); err != nil {
		return err
	}
	if err := checkName("destination", req.Destination); err != nil {
		return err
	}
	if err := h.Store.Copy(req.Source, req.Destination); err != nil {
		return storeError(req.Source, err)
	}
	return c.NoContent(http.StatusOK)
}

func (h *Handler) deleteModel(c echo.Context) error {
	var req ollamaapi.DeleteRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	name := firstNonEmpty(req.Model, req.Name)
	if name == "" {
		return errorf(http.StatusBadRequest, "model is required")
	}
	if err := checkName("model", name); err != nil {
		return err
	}
	e, err := h.Store.Resolve(name)
	if err != nil {
		return storeError(name, err)
	}
	// A model with running requests is not deleted under them; an idle
	// loaded one is unloaded first.
	if n := h.Infer.Unload(e.Path); n > 0 {
		return errorf(http.StatusConflict, "model %q is in use by %d request(s); try again when they finish", name, n)
	}
	if err := h.Store.Delete(name); err != nil {
		return storeError(name, err)
	}
	return c.NoContent(http.StatusOK)
}

func (h *Handler) headBlob(c echo.Context) error {
	d := c.Param("digest")
	if !models.ValidDigest(d) {
		return errorf(http.StatusBadRequest, "invalid digest %q", d)
	}
	if !h.Store.HasBlob(d) {
		return c.NoContent(http.StatusNotFound)
	}
	return c.NoContent(http.StatusOK)
}

func (h *Handler) postBlob(c echo.Context) error {
	d := c.Param("digest")
	if !models.ValidDigest(d) {
		return errorf(http.StatusBadRequest, "invalid digest %q", d)
	}
	if h.Store.HasBlob(d) {
		return c.NoContent(http.StatusOK)
	}
	// A declared size is checked before reading: 413 or 507 at once.
	if err := h.Store.CheckCapacity(c.Request().ContentLength); err != nil {
		return storeError(d, err)
	}
	if _, _, err := h.Store.WriteBlob(c.Request().Body, d); err != nil {
		return storeError(d, err)
	}
	return c.NoContent(http.StatusCreated)
}

// showFileError answers a model whose file could not be read after its
// name resolved: deleted meanwhile (a concurrent delete or create), a
// 404 as if show had come after it; else a 500 that names the model but
// not the server's paths, which go to the log.
func showFileError(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errorf(http.StatusNotFound, "model %q not found", name)
	}
	slog.Error("show: the model's file cannot be read", "model", name, "error", err)
	return errorf(http.StatusInternalServerError, "model %q: its file cannot be read (see the server log)", name)
}

// streamProgress answers a long operation: NDJSON status lines while it
// runs (the last is "success" or an error line), or one JSON answer when
// not streaming.
func streamProgress(c echo.Context, stream *bool, run func(progress func(ollamaapi.ProgressResponse)) error) error {
	if stream != nil && !*stream {
		if err := run(func(ollamaapi.ProgressResponse) {}); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, ollamaapi.ProgressResponse{Status: "success"})
	}
	// Through the dialect's StreamWriter, like every stream: each write
	// has the server's write timeout. A client that stops reading is cut
	// at that timeout and the operation stops with it, as when the client
	// hangs up (run reads the request's context).
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	c.SetRequest(c.Request().WithContext(ctx))
	w := dialect.NewStreamWriter(c, "application/x-ndjson")
	enc := json.NewEncoder(w.Buffer())
	var gone error
	write := func(v any) {
		if gone != nil {
			return
		}
		enc.Encode(v)
		if gone = w.Flush(); gone != nil {
			cancel()
		}
	}
	last := time.Time{}
	err := run(func(p ollamaapi.ProgressResponse) {
		// Byte counts come often: at most ten lines a second of them.
		if p.Total > 0 && p.Completed < p.Total && time.Since(last) < 100*time.Millisecond {
			return
		}
		last = time.Now()
		write(p)
	})
	if err != nil {
		write(ollamaapi.ErrorResponse{Error: dialect.From(err).Message})
	}
	return nil
}
