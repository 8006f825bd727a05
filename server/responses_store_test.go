package server

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/tadpole-llm/tadpole/models/testmodels"
	"github.com/tadpole-llm/tadpole/server/jobs"
	"github.com/tadpole-llm/tadpole/server/jobs/pgtest"
)

// noisyPNG is a side×side PNG of random pixels: it does not compress,
// so its size is about 3·side² bytes.
func noisyPNG(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewSource(1))
	for i := 0; i < len(img.Pix); i += 4 {
		v := r.Uint32()
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = byte(v), byte(v>>8), byte(v>>16), 255
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// dbSize is the job database's size on disk once its write-ahead log is
// checkpointed into it.
func dbSize(t *testing.T, dataDir string) int64 {
	t.Helper()
	path := filepath.Join(dataDir, "jobs.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func respModelsVision(t *testing.T) string {
	t.Helper()
	return testModels(t, "script", "bigram", "vision")
}

// A conversation continued by previous_response_id grows the database by
// what each turn adds, not by the whole conversation again: an image is
// stored once, and n small turns take about n times one turn's bytes.
func TestResponsesStoreGrowth(t *testing.T) {
	modelsDir, dataDir := respModelsVision(t), t.TempDir()
	ts := startRespServer(t, modelsDir, jobs.Config{Dir: dataDir}, nil)
	client := respClient(ts.URL, "unused")
	ctx := context.Background()

	// One image of ~1.5 MB (noise: PNG cannot shrink it), then 10 small
	// turns. (Each turn decodes it again, a second or more under -race,
	// so it is no bigger than it must be to dwarf the turns.)
	img := noisyPNG(t, 700)
	base := dbSize(t, dataDir)
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(1), Input: items(
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			{OfInputText: &responses.ResponseInputTextParam{Text: "What is this?"}},
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(dataURL(img))}},
		}, responses.EasyInputMessageRoleUser))})
	if err != nil {
		t.Fatal(err)
	}
	withImage := dbSize(t, dataDir)
	prev := first.ID
	for i := range 10 {
		r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(1),
			Input: text(fmt.Sprintf("Turn %d?", i)) /* short: the vision model is trained for 512 positions, its context capped there */, PreviousResponseID: openai.String(prev)})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		prev = r.ID
	}
	turns := dbSize(t, dataDir)
	t.Logf("image of %d bytes: +%d bytes; 10 turns after it: +%d bytes", len(img), withImage-base, turns-withImage)
	if turns-withImage > int64(len(img))/2 {
		t.Errorf("10 small turns after an image of %d bytes grew the database by %d bytes: the image is stored again", len(img), turns-withImage)
	}

	// Small turns: the second half adds about what the first did.
	n := 100
	if v, err := strconv.Atoi(os.Getenv("TADPOLE_RESP_TURNS")); err == nil && v >= 2 {
		n = v
	}
	start := dbSize(t, dataDir)
	prev = ""
	var half int64
	for i := range n {
		p := responses.ResponseNewParams{Model: "bigram", MaxOutputTokens: openai.Int(1), Input: text("Hi"), Truncation: responses.ResponseNewParamsTruncationAuto}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		r, err := client.Responses.New(ctx, p)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		prev = r.ID
		if i == n/2-1 {
			half = dbSize(t, dataDir)
		}
	}
	end := dbSize(t, dataDir)
	t.Logf("%d small turns: +%d bytes (first half +%d, second half +%d)", n, end-start, half-start, end-half)
	if end-half > 2*(half-start)+64<<10 {
		t.Errorf("%d small turns: the second half grew the database by %d bytes, the first by %d: growth is not linear", n, end-half, half-start)
	}
}

// Conversations with an image through the OpenAI client, on SQLite and
// PostgreSQL: continued, listed with the image as sent, continued past a
// deleted response, run in the background; the size bound and the
// per-key quota are 400s naming the limit (store: false still answers).
func TestResponsesStoreChains(t *testing.T) {
	models := respModelsVision(t)
	t.Run("sqlite", func(t *testing.T) { testResponsesStoreChains(t, models, jobs.Config{Dir: t.TempDir()}) })
	t.Run("postgres", func(t *testing.T) { testResponsesStoreChains(t, models, jobs.Config{URL: pgtest.Start(t).NewDB(t)}) })
}

func testResponsesStoreChains(t *testing.T, modelsDir string, cfg jobs.Config) {
	cfg.MaxResponseBytes, cfg.ResponseQuotaCount = 200_000, 5
	ts := startRespServer(t, modelsDir, cfg, nil)
	client := respClient(ts.URL, "unused")
	ctx := context.Background()
	img := dataURL(solidPNG(t, 48, color.NRGBA{200, 30, 30, 255}))
	withImage := func(s, url string) responses.ResponseNewParamsInputUnion {
		return items(responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			{OfInputText: &responses.ResponseInputTextParam{Text: s}},
			{OfInputImage: &responses.ResponseInputImageParam{ImageURL: openai.String(url)}},
		}, responses.EasyInputMessageRoleUser))
	}
	turn := func(prev, input string) *responses.Response {
		t.Helper()
		p := responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(2), Temperature: openai.Float(0), Input: text(input)}
		if prev != "" {
			p.PreviousResponseID = openai.String(prev)
		}
		r, err := client.Responses.New(ctx, p)
		if err != nil {
			t.Fatalf("turn %q after %s: %v", input, prev, err)
		}
		return r
	}
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(2), Temperature: openai.Float(0),
		Input: withImage("What is this?", img)})
	if err != nil {
		t.Fatal(err)
	}
	second := turn(first.ID, "And now?")
	if second.Usage.InputTokens <= first.Usage.InputTokens+int64(testmodels.VisionTokens)/2 {
		t.Fatalf("the second turn's prompt (%d tokens) does not hold the first's (%d)", second.Usage.InputTokens, first.Usage.InputTokens)
	}
	list, err := client.Responses.InputItems.List(ctx, first.ID, responses.InputItemListParams{})
	if err != nil || len(list.Data) != 1 {
		t.Fatalf("input items: %+v (%v)", list, err)
	}
	var got struct {
		Content []struct {
			Type     string `json:"type"`
			ImageURL string `json:"image_url"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(list.Data[0].RawJSON()), &got); err != nil || len(got.Content) != 2 || got.Content[1].ImageURL != img {
		t.Fatalf("input items: the image does not come back as sent: %.200s", list.Data[0].RawJSON())
	}
	// The first deleted: gone for its key, kept for the conversation.
	if err := client.Responses.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	_, err = client.Responses.Get(ctx, first.ID, responses.ResponseGetParams{})
	respAPIError(t, err, http.StatusNotFound, "", "not found")
	third := turn(second.ID, "Once more?")
	if third.Usage.InputTokens <= second.Usage.InputTokens {
		t.Fatalf("after the delete the conversation lost its start: %d input tokens, %d before", third.Usage.InputTokens, second.Usage.InputTokens)
	}
	// A background response continues it too (its job reads the chain).
	bg, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(2), Temperature: openai.Float(0),
		Input: text("In the background?"), PreviousResponseID: openai.String(third.ID), Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if d := poll(t, client, bg.ID); (d.Status != "completed" && d.Status != "incomplete") || d.Usage.InputTokens <= third.Usage.InputTokens {
		t.Fatalf("background continuation: %s, %d input tokens", d.Status, d.Usage.InputTokens)
	}

	// Too large to store: 400 naming the bound; not stored, it answers.
	big := withImage("Big?", dataURL(noisyPNG(t, 300)))
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(2), Input: big})
	respAPIError(t, err, http.StatusBadRequest, "input", "--max-stored-response")
	if _, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(2), Input: big, Store: openai.Bool(false)}); err != nil {
		t.Fatalf("the same with store false: %v", err)
	}
	// The quota: 5 stored (the deleted first counts while continued).
	turn(bg.ID, "Five?")
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "vision", MaxOutputTokens: openai.Int(2), Input: text("Seven?")})
	respAPIError(t, err, http.StatusBadRequest, "store", "--responses-quota-count")
	var e *openai.Error
	if errors.As(err, &e) && e.Code != "storage_quota_exceeded" {
		t.Errorf("quota error code %q", e.Code)
	}
}
