package auth

import "net/http"

// Allows reports whether r may see what a key protects: true when no keys
// are configured or r presents a valid key of any scope. The public
// routes (/readyz) use it to leave out what only a key holder may read,
// such as the names of the loaded models. It counts nothing against the
// key's rate.
func (a *Auth) Allows(r *http.Request) bool {
	return !a.Enabled() || a.lookup(secret(r)) != nil
}
