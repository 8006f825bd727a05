package registry

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tadpole-llm/tadpole/models"
	"github.com/tadpole-llm/tadpole/models/registry/registrytest"
	"github.com/tadpole-llm/tadpole/models/testmodels"
)

// publish puts the bigram test model with a system layer on the test
// registry under repo:tag and returns the model's bytes.
func publish(t *testing.T, reg *registrytest.Server, repo, tag string) []byte {
	t.Helper()
	path := t.TempDir() + "/bigram.gguf"
	if err := testmodels.WriteBigram(path); err != nil {
		t.Fatal(err)
	}
	gguf, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reg.PublishModel(repo, tag, gguf, "You are a test.")
	return gguf
}

func name(t *testing.T, s string) models.Name {
	t.Helper()
	n, err := models.ParseName(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPullAndPush(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	gguf := publish(t, reg, "library/bigram", "latest")
	st := &models.Store{Dir: t.TempDir()}
	c := &Client{Insecure: true, Allow: []string{reg.Host()}}
	var statuses []string
	var last Progress
	err := c.Pull(context.Background(), st, name(t, reg.Host()+"/library/bigram"), func(p Progress) {
		if len(statuses) == 0 || statuses[len(statuses)-1] != p.Status {
			statuses = append(statuses, p.Status)
		}
		if p.Total > 0 && p.Completed > p.Total {
			t.Errorf("progress %+v", p)
		}
		last = p
	})
	if err != nil {
		t.Fatal(err)
	}
	if last.Status != "success" || statuses[0] != "pulling manifest" || !contains(statuses, "verifying sha256 digest") || !contains(statuses, "writing manifest") {
		t.Fatalf("statuses %v", statuses)
	}
	e, err := st.Resolve(reg.Host() + "/library/bigram")
	if err != nil {
		t.Fatal(err)
	}
	if e.System != "You are a test." {
		t.Fatalf("system %q", e.System)
	}
	got, _ := os.ReadFile(e.Path)
	if !bytes.Equal(got, gguf) {
		t.Fatal("pulled model differs")
	}
	// Pulling again downloads nothing.
	before := len(reg.Requests)
	if err := c.Pull(context.Background(), st, name(t, reg.Host()+"/library/bigram"), nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range reg.Requests[before:] {
		if strings.Contains(r, "/blobs/") {
			t.Fatalf("re-pull fetched %s", r)
		}
	}
	// Push it under another name; the registry then serves it.
	if err := st.Copy(reg.Host()+"/library/bigram", reg.Host()+"/me/copy:v1"); err != nil {
		t.Fatal(err)
	}
	var pushStatuses []string
	if err := c.Push(context.Background(), st, name(t, reg.Host()+"/me/copy:v1"), func(p Progress) { pushStatuses = append(pushStatuses, p.Status) }); err != nil {
		t.Fatal(err)
	}
	if pushStatuses[len(pushStatuses)-1] != "success" {
		t.Fatalf("push statuses %v", pushStatuses)
	}
	st2 := &models.Store{Dir: t.TempDir()}
	if err := c.Pull(context.Background(), st2, name(t, reg.Host()+"/me/copy:v1"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st2.Resolve(reg.Host() + "/me/copy:v1"); err != nil {
		t.Fatal(err)
	}
	// Unknown models are ErrNotFound.
	if err := c.Pull(context.Background(), st, name(t, reg.Host()+"/library/nope"), nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown model: %v", err)
	}
}

// An interrupted download resumes where it stopped; the store never holds
// a partial or corrupt blob.
func TestPullResumesAndVerifies(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	publish(t, reg, "library/bigram", "latest")
	st := &models.Store{Dir: t.TempDir()}
	// Every request of the first pull is cut after 100 KB: it fails after
	// its retries, keeping what arrived.
	reg.CutAfter, reg.CutCount = 100_000, 1000
	c := &Client{Insecure: true, ChunkSize: 1 << 20, Allow: []string{"127.0.0.1"}}
	err := c.Pull(context.Background(), st, name(t, reg.Host()+"/library/bigram"), nil)
	if err == nil {
		t.Fatal("pull over a broken connection succeeded")
	}
	if _, err := st.Resolve(reg.Host() + "/library/bigram"); err == nil {
		t.Fatal("a manifest was written for an incomplete pull")
	}
	partials := 0
	ents, _ := os.ReadDir(st.Dir + "/blobs")
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-partial") {
			partials++
			info, _ := e.Info()
			if info.Size() == 0 {
				t.Fatal("nothing kept to resume")
			}
		}
	}
	if partials != 1 {
		t.Fatalf("%d partial blobs", partials)
	}
	reg.Mu.Lock()
	reg.CutCount = 0
	reg.Mu.Unlock()
	var first Progress
	err = c.Pull(context.Background(), st, name(t, reg.Host()+"/library/bigram"), func(p Progress) {
		if strings.HasPrefix(p.Status, "pulling ") && p.Total > 100_000 && first.Status == "" {
			first = p
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.Completed == 0 {
		t.Fatal("the second pull started from zero")
	}
	// A registry serving corrupt bytes: the blob is refused and removed.
	reg2 := registrytest.New()
	defer reg2.Close()
	publish(t, reg2, "library/bad", "latest")
	reg2.Mu.Lock()
	for d, b := range reg2.Blobs {
		if len(b) > 1000 {
			reg2.Corrupt = d
		}
	}
	reg2.Mu.Unlock()
	st2 := &models.Store{Dir: t.TempDir()}
	err = c.Pull(context.Background(), st2, name(t, reg2.Host()+"/library/bad"), nil)
	if err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("corrupt blob: %v", err)
	}
	if st2.HasBlob(reg2.Corrupt) {
		t.Fatal("a corrupt blob entered the store")
	}
	ents, _ = os.ReadDir(st2.Dir + "/blobs")
	for _, e := range ents {
		if strings.Contains(e.Name(), "partial") {
			t.Fatalf("corrupt partial left behind: %s", e.Name())
		}
	}
}

func TestBearerToken(t *testing.T) {
	reg := registrytest.New()
	defer reg.Close()
	reg.Token = "s3cret"
	publish(t, reg, "library/bigram", "latest")
	st := &models.Store{Dir: t.TempDir()}
	if err := (&Client{Insecure: true, Allow: []string{reg.Host()}}).Pull(context.Background(), st, name(t, reg.Host()+"/library/bigram"), nil); err != nil {
		t.Fatal(err)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
