package client

import (
	"context"
	"io"
	"net/http"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// Version asks GET /api/version.
func (c *Client) Version(ctx context.Context) (string, error) {
	var v ollamaapi.VersionResponse
	err := c.do(ctx, http.MethodGet, "/api/version", nil, &v)
	return v.Version, err
}

// List asks GET /api/tags for the models the server has.
func (c *Client) List(ctx context.Context) (*ollamaapi.ListResponse, error) {
	var v ollamaapi.ListResponse
	return &v, c.do(ctx, http.MethodGet, "/api/tags", nil, &v)
}

// Ps asks GET /api/ps for the loaded models.
func (c *Client) Ps(ctx context.Context) (*ollamaapi.ProcessResponse, error) {
	var v ollamaapi.ProcessResponse
	return &v, c.do(ctx, http.MethodGet, "/api/ps", nil, &v)
}

// Show asks POST /api/show for a model's details, Modelfile and template.
func (c *Client) Show(ctx context.Context, req *ollamaapi.ShowRequest) (*ollamaapi.ShowResponse, error) {
	var v ollamaapi.ShowResponse
	return &v, c.do(ctx, http.MethodPost, "/api/show", req, &v)
}

// Copy asks POST /api/copy to give a model a second name.
func (c *Client) Copy(ctx context.Context, req *ollamaapi.CopyRequest) error {
	return c.do(ctx, http.MethodPost, "/api/copy", req, nil)
}

// Delete asks DELETE /api/delete to remove a model.
func (c *Client) Delete(ctx context.Context, req *ollamaapi.DeleteRequest) error {
	return c.do(ctx, http.MethodDelete, "/api/delete", req, nil)
}

// ProgressFunc receives the status lines of create, pull and push.
type ProgressFunc func(ollamaapi.ProgressResponse) error

// Create asks POST /api/create to build a model, reporting its progress.
func (c *Client) Create(ctx context.Context, req *ollamaapi.CreateRequest, fn ProgressFunc) error {
	return stream(ctx, c, http.MethodPost, "/api/create", req, fn)
}

// Pull asks POST /api/pull to download a model from its registry.
func (c *Client) Pull(ctx context.Context, req *ollamaapi.PullRequest, fn ProgressFunc) error {
	return stream(ctx, c, http.MethodPost, "/api/pull", req, fn)
}

// Push asks POST /api/push to upload a model to its registry.
func (c *Client) Push(ctx context.Context, req *ollamaapi.PullRequest, fn ProgressFunc) error {
	return stream(ctx, c, http.MethodPost, "/api/push", req, fn)
}

// Generate asks POST /api/generate, calling fn with each streamed piece
// (or once, when req.Stream is false).
func (c *Client) Generate(ctx context.Context, req *ollamaapi.GenerateRequest, fn func(ollamaapi.GenerateResponse) error) error {
	return stream(ctx, c, http.MethodPost, "/api/generate", req, fn)
}

// Chat asks POST /api/chat, calling fn with each streamed piece (or once,
// when req.Stream is false).
func (c *Client) Chat(ctx context.Context, req *ollamaapi.ChatRequest, fn func(ollamaapi.ChatResponse) error) error {
	return stream(ctx, c, http.MethodPost, "/api/chat", req, fn)
}

// HasBlob asks HEAD /api/blobs/DIGEST whether the server has a blob.
func (c *Client) HasBlob(ctx context.Context, digest string) (bool, error) {
	resp, err := c.request(ctx, http.MethodHead, "/api/blobs/"+digest, nil)
	if IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	resp.Body.Close()
	return true, nil
}

// CreateBlob uploads size bytes from r as the blob DIGEST
// ("sha256:<hex>"); the server checks the digest.
func (c *Client) CreateBlob(ctx context.Context, digest string, r io.Reader, size int64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.JoinPath("/api/blobs/"+digest).String(), r)
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.send(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// Heartbeat asks HEAD / whether the server is up.
func (c *Client) Heartbeat(ctx context.Context) error {
	resp, err := c.request(ctx, http.MethodHead, "/", nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Embed asks POST /api/embed for the embeddings of req.Input (a JSON
// string or list of strings).
func (c *Client) Embed(ctx context.Context, req *ollamaapi.EmbedRequest) (*ollamaapi.EmbedResponse, error) {
	var v ollamaapi.EmbedResponse
	return &v, c.do(ctx, http.MethodPost, "/api/embed", req, &v)
}

// Embeddings asks the legacy POST /api/embeddings for one prompt's
// embedding.
func (c *Client) Embeddings(ctx context.Context, req *ollamaapi.EmbeddingRequest) (*ollamaapi.EmbeddingResponse, error) {
	var v ollamaapi.EmbeddingResponse
	return &v, c.do(ctx, http.MethodPost, "/api/embeddings", req, &v)
}
