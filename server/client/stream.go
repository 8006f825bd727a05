package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// stream sends a request whose answer is NDJSON (or, when the server
// does not stream, one JSON object) and calls fn with each line decoded
// as T. A line {"error": "..."} ends the stream with that error; an
// error returned by fn ends it too and is returned as is.
func stream[T any](ctx context.Context, c *Client, method, path string, body any, fn func(T) error) error {
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(line, &e) == nil && e.Error != "" {
				return &StatusError{StatusCode: resp.StatusCode, Message: e.Error}
			}
			var v T
			if derr := json.Unmarshal(line, &v); derr != nil {
				return fmt.Errorf("%s %s: decode line: %w", method, path, derr)
			}
			if ferr := fn(v); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s %s: read answer: %w", method, path, err)
		}
	}
}
