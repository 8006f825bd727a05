package mtmd

// LastEncodeNice is the nice value the projector's last encode ran at.
func (p *Projector) LastEncodeNice() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.lastNice
}

// TokenizeParts and TokenizeWhole are Tokenize's two ways: the text parts
// tokenized by the model, or all of it in one mtmd_tokenize call.
func (p *Projector) TokenizeParts(text string, media []*Media, addSpecial, parseSpecial bool) ([]Chunk, error) {
	return p.tokenizeParts(text, media, addSpecial, parseSpecial, nil)
}

func (p *Projector) TokenizeWhole(text string, media []*Media, addSpecial, parseSpecial bool) ([]Chunk, error) {
	return p.tokenize(text, media, addSpecial, parseSpecial)
}
