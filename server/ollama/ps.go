package ollama

import (
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tadpole-llm/tadpole/server/ollamaapi"
)

// farFuture is the expiry Ollama reports for models kept forever.
var farFuture = time.Date(2318, 1, 1, 0, 0, 0, 0, time.UTC)

func (h *Handler) ps(c echo.Context) error {
	resp := ollamaapi.ProcessResponse{Models: []ollamaapi.ProcessModel{}}
	var pc *ollamaapi.PromptCacheStatus
	if st, ok := h.Infer.PromptCache(); ok {
		pc = &ollamaapi.PromptCacheStatus{RAMBytes: st.RAMBytes, RAMEntries: st.RAMEntries, DiskBytes: st.DiskBytes, DiskEntries: st.DiskEntries}
	}
	keepAlive := h.Infer.KeepAlive()
	for _, in := range h.Infer.Loaded() {
		exp := in.ExpiresAt
		if exp.IsZero() {
			// Busy, or kept forever: Ollama shows when a busy model would
			// expire after its requests, and a far date for forever.
			exp = time.Now().Add(keepAlive)
			if in.Requests == 0 || keepAlive < 0 {
				exp = farFuture
			}
		}
		var adapters []ollamaapi.LoRAAdapterStatus
		for _, a := range in.Adapters {
			adapters = append(adapters, ollamaapi.LoRAAdapterStatus{ID: a.ID, Path: a.Path, Scale: a.Scale, Bytes: a.Bytes})
		}
		var details ollamaapi.ModelDetails
		digest := ""
		if e, err := h.Store.Resolve(in.Name); err == nil {
			details, digest = apiDetails(e.Details), e.Digest
		}
		resp.Models = append(resp.Models, ollamaapi.ProcessModel{
			Name: in.Name, Model: in.Name, Size: in.Size, SizeVRAM: in.SizeVRAM,
			Digest: digest, Details: details, ExpiresAt: exp, ContextLength: in.NumCtx,
			Tadpole: &ollamaapi.ProcessExtras{
				Processor: in.Processor, Placement: in.Placement, SlotsBusy: in.SlotsBusy, SlotsTotal: in.SlotsTotal,
				QueueDepth: in.QueueDepth, LoadedAt: in.LoadedAt, Sizing: in.Sizing,
				PromptCache: pc, DraftModel: in.DraftModel, LoRAAdapters: adapters,
			},
		})
	}
	sort.Slice(resp.Models, func(i, j int) bool { return resp.Models[i].Name < resp.Models[j].Name })
	return c.JSON(http.StatusOK, resp)
}
