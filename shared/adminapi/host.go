package adminapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"github.com/yp/paysvc/shared/tenant"
)

// LocalRoutesRefused says why the local routes (dashboard, admin API) may
// not be served by a server listening on addr in env, or "" when they may:
// only on a loopback address, only in the test environment.
func LocalRoutesRefused(addr net.Addr, env tenant.Environment) string {
	if env != tenant.EnvTest {
		return "the environment is " + string(env) + " (the dashboard and the admin API are for the test environment only)"
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return "the server listens on " + addr.String() + ", not a loopback address (the dashboard and the admin API are for this machine only: PAYSVC_ADDR=127.0.0.1:…)"
	}
	return ""
}

// AllowedHosts are the Host header values of a server on loopback address
// addr: the address itself and localhost with its port.
func AllowedHosts(addr net.Addr) []string {
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return []string{addr.String()}
	}
	return []string{addr.String(), net.JoinHostPort("localhost", port)}
}

// GuardHosts serves the requests under prefixes only when their Host
// header is one of hosts, so a web page cannot reach them through a name
// of its own that resolves to this machine (DNS rebinding); other paths go
// to next unchecked (the API authenticates every request).
func GuardHosts(hosts, prefixes []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		guarded := slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) })
		if guarded && !slices.Contains(hosts, strings.ToLower(r.Host)) {
			writeError(w, http.StatusForbidden, "local_host_refused",
				fmt.Sprintf("Host %q is not this local server (%s): the local routes answer only to their own address", r.Host, strings.Join(hosts, " or ")))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeError answers an error in the API's shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"errorCode": code, "message": message})
}
