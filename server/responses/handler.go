package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/infer"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// JobType is the job type of background responses.
const JobType = "response"

// DefaultTTL is how long stored responses are kept by default.
const DefaultTTL = 30 * 24 * time.Hour

// jobPriority: background responses wait behind interactive requests, as
// Anura's jobs do.
const jobPriority = -1

// Handler serves the Responses API.
type Handler struct {
	Infer Inference
	// Jobs stores responses and runs background ones (nil: nothing is
	// stored; store defaults to off and background is refused).
	Jobs *jobs.Store
	// TTL is how long a stored response is kept (0: DefaultTTL).
	TTL time.Duration
	// Usage counts background responses against their key (may be nil).
	Usage *usage.Table
}

// Register adds the routes to e; their errors are answered in OpenAI's
// shape by the server's error handler (every /v1/ path is OpenAI's).
func (h *Handler) Register(e *echo.Echo) {
	e.POST("/v1/responses", h.create)
	e.GET("/v1/responses/:id", h.get)
	e.DELETE("/v1/responses/:id", h.delete)
	e.GET("/v1/responses/:id/input_items", h.inputItems)
	e.POST("/v1/responses/:id/cancel", h.cancel)
}

// Inference is what the dialect calls of the generation path: an
// *infer.Service, or a fake of it in the package's own tests
// (server/infer/infertest).
type Inference interface {
	Generate(ctx context.Context, reqs ...*infer.Request) (*infer.Generation, error)
	ModelOptionsFrom(model string, base ollamaapi.Options) (ollamaapi.Options, error)
	Limits() infer.MediaLimits
}

var _ Inference = (*infer.Service)(nil)

func (h *Handler) ttl() time.Duration {
	if h.TTL > 0 {
		return h.TTL
	}
	return DefaultTTL
}

func owner(c echo.Context) string { return auth.KeyID(c.Request().Context()) }

// decode reads a JSON object into v (dialect.DecodeOpenAI).
func decode(c echo.Context, v any) error { return dialect.DecodeOpenAI(c, v) }

// create serves POST /v1/responses.
func (h *Handler) create(c echo.Context) error {
	var req CreateRequest
	if err := decode(c, &req); err != nil {
		return err
	}
	if req.Model != "" {
		c.Set("model", req.Model)
	}
	ctx := c.Request().Context()
	p, err := h.parse(ctx, &req, owner(c))
	if err != nil {
		return err
	}
	if err := h.build(p); err != nil {
		return err
	}
	store := req.storeOn() && h.Jobs != nil
	a := &answer{h: h, p: p, id: dialect.NewID("resp_"), created: time.Now().Unix(), store: store, owner: owner(c)}
	if store {
		// Refused before it is generated when it cannot be stored
		// (its size, its key's quota, the disk): saving checks again.
		body, _ := json.Marshal(a.snapshot("queued"))
		if err := h.Jobs.CheckResponse(ctx, a.record("queued", body)); err != nil {
			return storeError(err)
		}
	}
	if req.Background {
		return h.submit(c, a)
	}
	if req.Stream {
		return a.stream(c)
	}
	resp, err := a.run(ctx, 0)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// submit stores a queued background response and its job.
func (h *Handler) submit(c echo.Context, a *answer) error {
	ctx := c.Request().Context()
	resp := a.snapshot("queued")
	if err := a.save(ctx, resp); err != nil {
		return storeError(err)
	}
	body, _ := json.Marshal(jobRequest{ResponseID: a.id})
	j, err := h.Jobs.SubmitModel(ctx, JobType, a.owner, a.p.req.Model, body)
	if err == nil {
		err = h.Jobs.SetResponseJob(ctx, a.id, j.ID)
	}
	if err != nil {
		// Nothing half-written: the queued response goes.
		_ = h.Jobs.DeleteResponse(context.WithoutCancel(ctx), a.id, a.owner)
		if j != nil {
			_, _ = h.Jobs.Cancel(context.WithoutCancel(ctx), j.ID)
		}
		if errors.Is(err, jobs.ErrQuota) {
			e := dialect.Errorf(http.StatusTooManyRequests, "%v for this API key; submit more when some have run", err)
			e.RetryAfter = 5
			return e
		}
		if errors.Is(err, jobs.ErrDiskLow) {
			return storeError(err)
		}
		return internal(err)
	}
	return c.JSON(http.StatusOK, resp)
}

// jobRequest is a background response's job.
type jobRequest struct {
	ResponseID string `json:"response_id"`
}

// stored finds a response the request's key may see.
func (h *Handler) stored(c echo.Context) (*jobs.StoredResponse, error) {
	id := c.Param("id")
	if h.Jobs == nil {
		return nil, notFound(dialect.Trim(id))
	}
	r, err := h.Jobs.GetResponse(c.Request().Context(), id, owner(c))
	if errors.Is(err, jobs.ErrResponseNotFound) {
		return nil, notFound(dialect.Trim(id))
	}
	if err != nil {
		return nil, internal(err)
	}
	return r, nil
}

// get serves GET /v1/responses/{id}.
func (h *Handler) get(c echo.Context) error {
	if c.QueryParam("stream") == "true" {
		return notSupported("stream", "Replaying a response's stream is not supported: GET it without 'stream'.")
	}
	r, err := h.stored(c)
	if err != nil {
		return err
	}
	body := r.Body
	if (r.Status == "queued" || r.Status == "in_progress") && r.JobID != "" {
		// A job the store failed (too many restarts, its deadline)
		// never came back to say so.
		if j, err := h.Jobs.Get(c.Request().Context(), r.JobID); err == nil && (j.State == jobs.Failed || j.State == jobs.Cancelled) {
			var resp Response
			if json.Unmarshal(r.Body, &resp) == nil {
				resp.Status = "failed"
				if j.State == jobs.Cancelled {
					resp.Status = "cancelled"
				} else {
					resp.Error = &ResponseError{Code: "server_error", Message: j.Error}
				}
				body, _ = json.Marshal(resp)
			}
		}
	}
	return c.JSONBlob(http.StatusOK, body)
}

// delete serves DELETE /v1/responses/{id}.
func (h *Handler) delete(c echo.Context) error {
	r, err := h.stored(c)
	if err != nil {
		return err
	}
	if r.JobID != "" && (r.Status == "queued" || r.Status == "in_progress") {
		_, _ = h.Jobs.Cancel(c.Request().Context(), r.JobID)
	}
	if err := h.Jobs.DeleteResponse(c.Request().Context(), r.ID, r.Owner); err != nil {
		if errors.Is(err, jobs.ErrResponseNotFound) {
			return notFound(dialect.Trim(r.ID))
		}
		return internal(err)
	}
	return c.JSON(http.StatusOK, deleted{ID: r.ID, Object: "response", Deleted: true})
}

// inputItems serves GET /v1/responses/{id}/input_items: the response's
// input items, newest first unless order=asc, after and limit (1..100,
// default 20) paging.
func (h *Handler) inputItems(c echo.Context) error {
	r, err := h.stored(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	imgs, err := h.images(ctx, r.Owner, r.Input)
	if err != nil {
		return internal(err)
	}
	stored, err := restore(orArray(r.Input), imgs)
	if err != nil {
		return internal(err)
	}
	items := make([]json.RawMessage, len(stored))
	for i, it := range stored {
		if items[i], err = json.Marshal(it); err != nil {
			return internal(err)
		}
	}
	order := c.QueryParam("order")
	switch order {
	case "", "desc":
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	case "asc":
	default:
		return invalid("order", "Invalid value for 'order': %q. Supported values are: 'asc' and 'desc'.", dialect.Trim(order))
	}
	limit := 20
	if l := c.QueryParam("limit"); l != "" {
		if _, err := fmt.Sscanf(l, "%d", &limit); err != nil || limit < 1 || limit > 100 {
			return invalid("limit", "Invalid 'limit': %q. Expected an integer between 1 and 100.", dialect.Trim(l))
		}
	}
	if after := c.QueryParam("after"); after != "" {
		for i, raw := range items {
			var it struct{ ID string }
			json.Unmarshal(raw, &it)
			if it.ID == after {
				items = items[i+1:]
				break
			}
		}
	}
	out := itemList{Object: "list", Data: items}
	if len(items) > limit {
		out.Data, out.HasMore = items[:limit], true
	}
	if out.Data == nil {
		out.Data = []json.RawMessage{}
	}
	if n := len(out.Data); n > 0 {
		var first, last struct{ ID string }
		json.Unmarshal(out.Data[0], &first)
		json.Unmarshal(out.Data[n-1], &last)
		out.FirstID, out.LastID = &first.ID, &last.ID
	}
	return c.JSON(http.StatusOK, out)
}

// cancel serves POST /v1/responses/{id}/cancel: a queued or running
// background response is cancelled; a finished one is returned as it is.
func (h *Handler) cancel(c echo.Context) error {
	r, err := h.stored(c)
	if err != nil {
		return err
	}
	var bg struct {
		Background bool `json:"background"`
	}
	_ = json.Unmarshal(r.Body, &bg)
	if !bg.Background {
		return invalid("", "Cannot cancel a synchronous response: only responses created with 'background' true can be cancelled.")
	}
	ctx := c.Request().Context()
	if r.Status == "queued" || r.Status == "in_progress" {
		if r.JobID != "" {
			if _, err := h.Jobs.Cancel(ctx, r.JobID); err != nil && !errors.Is(err, jobs.ErrFinished) && !errors.Is(err, jobs.ErrNotFound) {
				return internal(err)
			}
		}
		var resp Response
		if err := json.Unmarshal(r.Body, &resp); err != nil {
			return internal(err)
		}
		resp.Status = "cancelled"
		body, _ := json.Marshal(resp)
		if _, err := h.Jobs.UpdateResponse(ctx, r.ID, "cancelled", body, "completed", "incomplete", "failed", "cancelled"); err != nil {
			return internal(err)
		}
		if r, err = h.stored(c); err != nil {
			return err
		}
	}
	return c.JSONBlob(http.StatusOK, r.Body)
}

// RunJob runs a background response for the job workers.
func (h *Handler) RunJob(ctx context.Context, j *jobs.Job) ([]byte, error) {
	var jr jobRequest
	if err := json.Unmarshal(j.Request, &jr); err != nil {
		return nil, fmt.Errorf("invalid response job: %v", err)
	}
	if h.Usage != nil && j.Owner != "" {
		ctx = usage.NewContext(ctx, h.Usage.For(j.Owner))
	}
	chain, err := h.Jobs.ResponseChain(ctx, jr.ResponseID, j.Owner)
	if err != nil {
		return nil, err // deleted or expired meanwhile
	}
	r := chain[len(chain)-1]
	if r.Status == "cancelled" {
		return nil, errors.New("cancelled")
	}
	var req CreateRequest
	if err := json.Unmarshal(r.Request, &req); err != nil {
		return nil, fmt.Errorf("stored request: %v", err)
	}
	p := &prepared{req: &req, parallel: req.ParallelToolCalls == nil || *req.ParallelToolCalls}
	// The conversation it continues, then its own earlier conversation
	// (a response stored whole, before chains) and input.
	if p.history, err = h.conversation(ctx, chain[:len(chain)-1]); err != nil {
		return nil, fmt.Errorf("stored conversation: %v", err)
	}
	imgs, err := h.images(ctx, r.Owner, r.Context, r.Input)
	if err != nil {
		return nil, err
	}
	hist, err := restore(orArray(r.Context), imgs)
	if err != nil {
		return nil, fmt.Errorf("stored conversation: %v", err)
	}
	p.history = append(p.history, hist...)
	if p.input, err = restore(orArray(r.Input), imgs); err != nil {
		return nil, fmt.Errorf("stored input: %v", err)
	}
	var created Response
	_ = json.Unmarshal(r.Body, &created)
	a := &answer{h: h, p: p, id: r.ID, created: created.CreatedAt, store: true, owner: r.Owner, background: true, expires: r.ExpiresAt}
	final := []string{"cancelled", "completed", "incomplete", "failed"}
	fail := func(err error) ([]byte, error) {
		resp := a.snapshot("failed")
		resp.Error = &ResponseError{Code: "server_error", Message: dialect.From(err).Message}
		body, _ := json.Marshal(resp)
		_, _ = h.Jobs.UpdateResponse(context.WithoutCancel(ctx), r.ID, "failed", body, final...)
		return nil, err
	}
	if err := h.build(p); err != nil {
		return fail(err)
	}
	body, _ := json.Marshal(a.snapshot("in_progress"))
	if ok, err := h.Jobs.UpdateResponse(ctx, r.ID, "in_progress", body, final...); err != nil || !ok {
		return nil, errors.New("cancelled")
	}
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		resp, err := a.run(ctx, jobPriority)
		if err == nil {
			return json.Marshal(resp)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err() // cancelled, or the server stops: the job says which
		}
		if dialect.From(err).Status != http.StatusServiceUnavailable {
			return fail(err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
