package web

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
)

// Authentication (PROTOCOL.md, "Authentication"). With Config.Token set,
// as `viewer serve --listen` does, every request must present the token,
// as Jupyter's servers ask: the printed URL carries it once as ?token=,
// which the server turns into an HttpOnly SameSite=Strict cookie (and
// redirects a page request to the URL without it, out of the address bar
// and history); API clients send "Authorization: Bearer TOKEN". Tokens
// are compared in constant time. Without a token (the loopback default)
// nothing changes.

// NewToken returns a random token for Config.Token: 32 bytes, hex.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tokenCookie is the cookie's name for the server at r.Host: cookies are
// per host, not per port, so two viewers on one host keep two cookies.
func tokenCookie(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		if _, ok := splitHost(r.Host); ok {
			return "viewer_token_" + port
		}
	}
	return "viewer_token"
}

// tokenOK compares a presented token with the server's in constant time
// (of the hashes, so that its length does not show either).
func (s *Server) tokenOK(got string) bool {
	a := sha256.Sum256([]byte(got))
	b := sha256.Sum256([]byte(s.cfg.Token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// checkToken refuses requests without the server's token with 401.
func (s *Server) checkToken(next http.Handler) http.Handler {
	if s.cfg.Token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("token") && s.tokenOK(q.Get("token")) {
			http.SetCookie(w, &http.Cookie{
				Name: tokenCookie(r), Value: s.cfg.Token, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
			})
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, "/static/") {
				q.Del("token")
				u := *r.URL
				u.RawQuery = q.Encode()
				w.Header().Set("Cache-Control", "no-store")
				http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if c, err := r.Cookie(tokenCookie(r)); err == nil && s.tokenOK(c.Value) {
			next.ServeHTTP(w, r)
			return
		}
		if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") && s.tokenOK(strings.TrimSpace(h[7:])) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="viewer"`)
		const msg = "this viewer needs its access token: open the URL it printed (with ?token=…), or send Authorization: Bearer TOKEN"
		if strings.HasPrefix(r.URL.Path, "/api/") {
			writeError(w, http.StatusUnauthorized, msg)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		http.Error(w, msg, http.StatusUnauthorized)
	})
}
