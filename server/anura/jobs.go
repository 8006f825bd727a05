package anura

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/auth"
	"github.com/tadpole-llm/tadpole/server/dialect"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/ollamaapi"
	"github.com/tadpole-llm/tadpole/server/ollamagen"
	"github.com/tadpole-llm/tadpole/server/usage"
)

// The job types.
const (
	typeCowsay = "cowsay"
	typeOllama = "ollama"
)

// jobPriority puts jobs behind interactive requests (0) for slots.
const jobPriority = -1

// quotaRetryAfter is the Retry-After (seconds) of a submission refused
// because the key's queue is full.
const quotaRetryAfter = 10

// jobDoc is a job as the API shows it. Status is the numeric state: 0
// queued, 1 running, 2 completed (results ready), 3 failed, 4 cancelled.
type jobDoc struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Status     int             `json:"status"`
	State      jobs.State      `json:"state"`
	Model      string          `json:"model,omitempty"`
	Request    json.RawMessage `json:"request,omitempty"`
	Error      string          `json:"error,omitempty"`
	Attempts   int             `json:"attempts"`
	CreatedAt  time.Time       `json:"created_at"`
	StartedAt  *time.Time      `json:"started_at,omitempty"`
	FinishedAt *time.Time      `json:"finished_at,omitempty"`
	ResultsURL string          `json:"results_url"`
}

func doc(j *jobs.Job) jobDoc {
	d := jobDoc{
		ID: j.ID, Type: j.Type, Status: j.State.Code(), State: j.State, Error: j.Error, Attempts: j.Attempts,
		CreatedAt: j.CreatedAt, ResultsURL: "/api/v1/" + j.Type + "/" + j.ID + "/results",
	}
	if json.Valid(j.Request) {
		d.Request = j.Request
	}
	var m struct {
		Model string `json:"model"`
	}
	if j.Type == typeOllama && json.Unmarshal(j.Request, &m) == nil {
		d.Model = m.Model
	}
	if !j.StartedAt.IsZero() {
		d.StartedAt = &j.StartedAt
	}
	if !j.FinishedAt.IsZero() {
		d.FinishedAt = &j.FinishedAt
	}
	return d
}

// jobStore is the job store, or a 503 when jobs are disabled.
func (h *Handler) jobStore() (*jobs.Store, error) {
	if h.Jobs == nil {
		return nil, errorf(http.StatusServiceUnavailable, "jobs are disabled: the server has no data directory")
	}
	return h.Jobs, nil
}

// storeError answers a job store's error: a 503 with Retry-After while
// the database cannot be reached (generation still works; jobs resume
// when it is back), else a 500.
func storeError(err error) error {
	if errors.Is(err, jobs.ErrUnavailable) {
		// The driver's message (hosts, users) stays in the server's log.
		slog.Warn("job store", "error", err)
		return dialect.Unavailable("%v; try again later", jobs.ErrUnavailable)
	}
	if errors.Is(err, jobs.ErrDiskLow) {
		return errorf(http.StatusInsufficientStorage, "%v; the job was not stored", err)
	}
	return errorf(http.StatusInternalServerError, "%v", err)
}

// owner is the id of the key a request was made with ("" without keys):
// a key sees only its own jobs.
func owner(c echo.Context) string { return auth.KeyID(c.Request().Context()) }

// job finds a job the request's key may see.
func (h *Handler) job(c echo.Context) (*jobs.Job, error) {
	st, err := h.jobStore()
	if err != nil {
		return nil, err
	}
	id := c.Param("id")
	j, err := st.Get(c.Request().Context(), id)
	if errors.Is(err, jobs.ErrNotFound) || (err == nil && owner(c) != "" && j.Owner != owner(c)) {
		return nil, errorf(http.StatusNotFound, "job %q not found", id)
	}
	if err != nil {
		return nil, storeError(err)
	}
	return j, nil
}

// submit stores a validated job of a model ("" for none) and answers 202
// with it.
func (h *Handler) submit(c echo.Context, typ, model string, body []byte) error {
	st, err := h.jobStore()
	if err != nil {
		return err
	}
	j, err := st.SubmitModel(c.Request().Context(), typ, owner(c), model, body)
	if errors.Is(err, jobs.ErrQuota) {
		e := dialect.Errorf(http.StatusTooManyRequests, "%v for this API key; submit more when some have run", err)
		e.RetryAfter = quotaRetryAfter
		return e
	}
	if err != nil {
		return storeError(err)
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/jobs/"+j.ID)
	return reply(c, http.StatusAccepted, "job queued", doc(j))
}

// cowsayRequest is the body of POST /api/v1/cowsay.
type cowsayRequest struct {
	Message string `json:"message"`
}

func parseCowsay(body []byte) (string, error) {
	var req cowsayRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return "", errorf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	if strings.TrimSpace(req.Message) == "" {
		return "", errorf(http.StatusBadRequest, "message is required")
	}
	return req.Message, nil
}

func (h *Handler) submitCowsay(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if _, err := parseCowsay(body); err != nil {
		return err
	}
	return h.submit(c, typeCowsay, "", body)
}

// parseOllama reads an ollama job's body: an /api/chat request when it
// has messages, else an /api/generate request (with a prompt). The
// top-level max_tokens and temperature of Anura's examples become options
// the request does not set itself. The job is never streamed.
func parseOllama(body []byte) (*ollamaapi.GenerateRequest, *ollamaapi.ChatRequest, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, nil, errorf(http.StatusBadRequest, "invalid JSON: %v", err)
	}
	given := func(k string) bool { v, ok := probe[k]; return ok && string(v) != "null" }
	if given("messages") == given("prompt") {
		return nil, nil, errorf(http.StatusBadRequest, "an ollama job has either messages (an /api/chat request) or a prompt (an /api/generate request)")
	}
	var extra struct {
		MaxTokens   *int     `json:"max_tokens"`
		Temperature *float64 `json:"temperature"`
	}
	var gen *ollamaapi.GenerateRequest
	var chat *ollamaapi.ChatRequest
	var into any
	if given("messages") {
		chat = &ollamaapi.ChatRequest{}
		into = chat
	} else {
		gen = &ollamaapi.GenerateRequest{}
		into = gen
	}
	for _, v := range []any{into, &extra} {
		if err := json.Unmarshal(body, v); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, nil, errorf(http.StatusBadRequest, "invalid value for %q: expected %s", te.Field, te.Type)
			}
			return nil, nil, errorf(http.StatusBadRequest, "invalid JSON: %v", err)
		}
	}
	model, opts := "", map[string]any(nil)
	if chat != nil {
		model, opts = chat.Model, chat.Options
	} else {
		model, opts = gen.Model, gen.Options
	}
	if model == "" {
		return nil, nil, errorf(http.StatusBadRequest, "model is required")
	}
	if opts == nil {
		opts = map[string]any{}
	}
	if _, ok := opts["num_predict"]; !ok && extra.MaxTokens != nil {
		opts["num_predict"] = *extra.MaxTokens
	}
	if _, ok := opts["temperature"]; !ok && extra.Temperature != nil {
		opts["temperature"] = *extra.Temperature
	}
	noStream := false
	if chat != nil {
		chat.Options, chat.Stream = opts, &noStream
	} else {
		gen.Options, gen.Stream = opts, &noStream
	}
	return gen, chat, nil
}

func (h *Handler) submitOllama(c echo.Context) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	gen, chat, err := parseOllama(body)
	if err != nil {
		return err
	}
	model, opts := jobModel(gen, chat)
	c.Set("model", model)
	if err := h.limitTokens(model, opts); err != nil {
		return err
	}
	return h.submit(c, typeOllama, model, body)
}

// jobModel is an ollama job's model and options.
func jobModel(gen *ollamaapi.GenerateRequest, chat *ollamaapi.ChatRequest) (string, map[string]any) {
	if chat != nil {
		return chat.Model, chat.Options
	}
	return gen.Model, gen.Options
}

// limitTokens applies JobMaxTokens to an ollama job's options (after
// parseOllama, so max_tokens is num_predict): a num_predict over the limit
// or unlimited (negative) is refused with a 400 naming the limit, never
// lowered; a job without one gets the model's default num_predict when
// that is within the limit, else the limit.
func (h *Handler) limitTokens(model string, opts map[string]any) error {
	limit := h.JobMaxTokens
	if limit <= 0 {
		return nil
	}
	if v, ok := opts["num_predict"]; ok {
		o := ollamaapi.DefaultOptions()
		if _, err := o.Apply(map[string]any{"num_predict": v}); err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		if o.NumPredict < 0 || o.NumPredict > limit {
			return errorf(http.StatusBadRequest, "num_predict %d is over the job limit: a job may generate at most %d tokens (num_predict or max_tokens 0..%d; unlimited is not allowed)",
				o.NumPredict, limit, limit)
		}
		return nil
	}
	def := -1
	if h.Infer != nil {
		if o, err := h.Infer.ModelOptions(model); err == nil {
			def = o.NumPredict
		}
	}
	if def < 0 || def > limit {
		opts["num_predict"] = limit
	}
	return nil
}

func (h *Handler) getJob(c echo.Context) error {
	j, err := h.job(c)
	if err != nil {
		return err
	}
	return reply(c, http.StatusOK, "job "+string(j.State), doc(j))
}

func (h *Handler) cancelJob(c echo.Context) error {
	j, err := h.job(c)
	if err != nil {
		return err
	}
	j, err = h.Jobs.Cancel(c.Request().Context(), j.ID)
	switch {
	case errors.Is(err, jobs.ErrFinished) && j.State != jobs.Cancelled:
		return errorf(http.StatusConflict, "job %q has already %s", j.ID, j.State)
	case err != nil && !errors.Is(err, jobs.ErrFinished):
		return storeError(err)
	}
	return reply(c, http.StatusOK, "job cancelled", doc(j))
}

// jobList is a page of GET /api/v1/jobs.
type jobList struct {
	Jobs []jobDoc `json:"jobs"`
	// Next is the after= value of the next page; "" on the last.
	Next string `json:"next"`
}

// listJobs lists the key's jobs, newest first: ?status= (names or codes,
// comma-separated), ?type=, ?limit= (default 50, at most 1000), ?after=
// (the previous page's next).
func (h *Handler) listJobs(c echo.Context) error {
	st, err := h.jobStore()
	if err != nil {
		return err
	}
	q := jobs.Query{Owner: owner(c), Type: c.QueryParam("type"), After: c.QueryParam("after")}
	for _, s := range strings.Split(c.QueryParam("status"), ",") {
		if strings.TrimSpace(s) == "" {
			continue
		}
		state, err := jobs.ParseState(s)
		if err != nil {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		q.States = append(q.States, state)
	}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return errorf(http.StatusBadRequest, "limit must be a number from 1 to 1000")
		}
		q.Limit = n
	}
	page, next, err := st.List(c.Request().Context(), q)
	if err != nil {
		if errors.Is(err, jobs.ErrBadCursor) {
			return errorf(http.StatusBadRequest, "%v", err)
		}
		return storeError(err)
	}
	out := jobList{Jobs: make([]jobDoc, 0, len(page)), Next: next}
	for _, j := range page {
		out.Jobs = append(out.Jobs, doc(j))
	}
	return reply(c, http.StatusOK, fmt.Sprintf("%d jobs", len(out.Jobs)), out)
}

// results answers a job's output: the ASCII art of a cowsay job
// (text/plain), the non-streamed Ollama answer of an ollama job. A job
// that has not finished is answered 202 with its status; a failed or
// cancelled one 409 with its error.
func (h *Handler) results(typ string) echo.HandlerFunc {
	return func(c echo.Context) error {
		j, err := h.job(c)
		if err != nil {
			return err
		}
		if j.Type != typ {
			return errorf(http.StatusNotFound, "%s job %q not found", typ, j.ID)
		}
		switch j.State {
		case jobs.Completed:
			if typ == typeCowsay {
				return c.Blob(http.StatusOK, echo.MIMETextPlainCharsetUTF8, j.Result)
			}
			return c.JSONBlob(http.StatusOK, j.Result)
		case jobs.Queued, jobs.Running:
			c.Response().Header().Set("Retry-After", "1")
			return reply(c, http.StatusAccepted, "job "+string(j.State)+": results are not ready", doc(j))
		}
		return errorf(http.StatusConflict, "job %q %s: %s", j.ID, j.State, j.Error)
	}
}

// RunJob runs one job for the job workers: its result, or the error to
// record.
func (h *Handler) RunJob(ctx context.Context, j *jobs.Job) ([]byte, error) {
	if h.Usage != nil && j.Owner != "" {
		ctx = usage.NewContext(ctx, h.Usage.For(j.Owner))
	}
	switch j.Type {
	case typeCowsay:
		msg, err := parseCowsay(j.Request)
		if err != nil {
			return nil, err
		}
		return []byte(Cowsay(msg)), nil
	case typeOllama:
		return h.runOllama(ctx, j)
	}
	return nil, fmt.Errorf("unknown job type %q", j.Type)
}

// runOllama runs an ollama job at job priority. While the server is
// overloaded (503) it waits and tries again rather than failing the job.
func (h *Handler) runOllama(ctx context.Context, j *jobs.Job) ([]byte, error) {
	gen, chat, err := parseOllama(j.Request)
	if err != nil {
		return nil, err
	}
	// Checked again: the limit may have been lowered since submission.
	if err := h.limitTokens(jobModel(gen, chat)); err != nil {
		return nil, err
	}
	r := ollamagen.Runner{Infer: h.Infer, Priority: jobPriority}
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		var resp any
		if chat != nil {
			resp, err = r.Chat(ctx, chat)
		} else {
			resp, err = r.Generate(ctx, gen)
		}
		if err == nil {
			return json.Marshal(resp)
		}
		if e := dialect.From(err); e.Status != http.StatusServiceUnavailable {
			return nil, errors.New(e.Message)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
