package ollama

import (
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/api"
)

// farFuture is the expiry Ollama reports for models kept forever.
var farFuture = time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC)

func (h *Handler) ps(c echo.Context) error {
	resp := api.ProcessResponse{Models: []api.ProcessModel{}}
	var pc *api.PromptCacheStatus
	if c := h.Sched.Config().PromptCache; c != nil {
		st := c.Stats()
		pc = &api.PromptCacheStatus{RAMBytes: st.RAMBytes, RAMEntries: st.RAMEntries, DiskBytes: st.DiskBytes, DiskEntries: st.DiskEntries}
	}
	for _, in := range h.Sched.Status() {
		busy, total := in.Runner.Slots()
		exp := in.ExpiresAt
		if exp.IsZero() {
			// Busy, or kept forever: Ollama shows when a busy model would
			// expire after its requests, and a far date for forever.
			exp = time.Now().Add(h.Sched.Config().KeepAlive)
			if in.Requests == 0 || h.Sched.Config().KeepAlive < 0 {
				exp = farFuture
			}
		}
		p := in.Placement
		var details api.ModelDetails
		digest := ""
		if e, err := h.Store.Resolve(in.Name); err == nil {
			details, digest = apiDetails(e.Details), e.Digest
		}
		resp.Models = append(resp.Models, api.ProcessModel{
			Name: in.Name, Model: in.Name, Size: int64(p.EstimatedBytes), SizeVRAM: int64(p.EstimatedGPUBytes),
			Digest: digest, Details: details, ExpiresAt: exp, ContextLength: in.NumCtx,
			Tadpole: &api.ProcessExtras{
				Processor: p.Processor(), Placement: p, SlotsBusy: busy, SlotsTotal: total,
				QueueDepth: in.Runner.Waiting(), LoadedAt: in.LoadedAt, Sizing: in.Sizing,
				PromptCache: pc, DraftModel: in.Key.Draft,
			},
		})
	}
	sort.Slice(resp.Models, func(i, j int) bool { return resp.Models[i].Name < resp.Models[j].Name })
	return c.JSON(http.StatusOK, resp)
}
