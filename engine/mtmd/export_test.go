package mtmd

// LastEncodeNice is the nice value the projector's last encode ran at.
func (p *Projector) LastEncodeNice() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.lastNice
}
