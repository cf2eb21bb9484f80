// Package target decides whether a URL may receive webhook deliveries. It is
// the one check for every way a target gets in (the admin CLI's create and
// update, seed files, the provisioner, any API) and is repeated before each
// delivery; the sender's dialer (code.dny.dev/ssrf) checks the address it
// actually connects to, so DNS cannot point an accepted name elsewhere.
//
// A target is an https URL on port 443 whose host is a public DNS name or a
// public address. Numeric host forms that resolvers accept ("2130706433",
// "0x7f.1", "0177.0.0.1", "127.1") are read as the addresses they are;
// special-use ranges (loopback, private, carrier-grade NAT, link-local,
// unique-local, multicast, documentation, benchmarking, unspecified, and
// IPv6 forms embedding an IPv4 address) and local or cloud-metadata names
// are refused. In development, allowLocal admits http or https on loopback
// and localhost, any port.
package target

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"code.dny.dev/ssrf"
)

// ErrRefused is wrapped by every refusal; the message says why.
var ErrRefused = errors.New("webhook target refused")

// Target is an accepted target.
type Target struct {
	URL *url.URL
	// Local is true for a loopback/localhost target admitted by allowLocal.
	Local bool
}

// Check parses raw and reports whether it may receive deliveries.
func Check(raw string, allowLocal bool) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return Target{}, refuse("not an absolute URL")
	}
	if u.User != nil {
		return Target{}, refuse("credentials in the URL")
	}
	if u.Fragment != "" {
		return Target{}, refuse("a #fragment in the URL")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return Target{}, refuse("no host")
	}
	addr, isIP := parseHost(host)
	if isLoopback(host, addr, isIP) {
		if !allowLocal {
			return Target{}, refuse(fmt.Sprintf("%s is a local address (development only: allow local targets)", u.Hostname()))
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return Target{}, refuse(fmt.Sprintf("scheme %q", u.Scheme))
		}
		return Target{URL: u, Local: true}, nil
	}
	if u.Scheme != "https" {
		return Target{}, refuse("only https targets are accepted")
	}
	if p := u.Port(); p != "" && p != "443" {
		return Target{}, refuse("port " + p + " (only 443)")
	}
	if isIP {
		if why := specialUse(addr); why != "" {
			return Target{}, refuse(fmt.Sprintf("%s is %s, not a public address", u.Hostname(), why))
		}
		return Target{URL: u}, nil
	}
	if why := localName(host); why != "" {
		return Target{}, refuse(fmt.Sprintf("%s is %s", u.Hostname(), why))
	}
	return Target{URL: u}, nil
}

func refuse(why string) error { return fmt.Errorf("%w: %s", ErrRefused, why) }

// parseHost reads host as an IP address in any form a resolver accepts:
// IPv6, dotted IPv4, and the inet_aton forms with one to four parts in
// decimal, octal (leading 0) or hexadecimal (0x).
func parseHost(host string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.WithZone(""), true
	}
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseInetPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	// The last part fills the remaining bytes: a, a.b (8.24), a.b.c (8.8.16).
	var v uint64
	last := len(nums) - 1
	for i := 0; i < last; i++ {
		if nums[i] > 0xff {
			return netip.Addr{}, false
		}
		v |= nums[i] << (8 * (3 - i))
	}
	if nums[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v |= nums[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseInetPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	n, err := strconv.ParseUint(p, base, 32)
	return n, err == nil
}

// loopbackNames are names resolvers map to the local machine.
var loopbackNames = map[string]bool{
	"localhost": true, "ip6-localhost": true, "ip6-loopback": true,
	"localhost.localdomain": true, "localhost6": true, "localhost6.localdomain6": true,
}

func isLoopback(host string, addr netip.Addr, isIP bool) bool {
	if isIP {
		return addr.Unmap().IsLoopback()
	}
	return loopbackNames[host] || strings.HasSuffix(host, ".localhost")
}

// metadataNames are cloud instance-metadata endpoints reachable by name.
var metadataNames = map[string]bool{
	"metadata.google.internal": true, "metadata.goog": true, "metadata": true,
	"instance-data": true, "instance-data.ec2.internal": true,
	"metadata.azure.com": true, "metadata.tencentyun.com": true,
	"100-100-100-200.metadata": true,
}

// localSuffixes are special-use domains that never name a public host.
var localSuffixes = []string{".local", ".internal", ".localdomain", ".home.arpa", ".lan", ".intranet", ".corp", ".onion", ".invalid", ".arpa"}

func localName(host string) string {
	if metadataNames[host] {
		return "a cloud metadata host"
	}
	if !strings.Contains(host, ".") {
		return "not a fully qualified public name"
	}
	for _, s := range localSuffixes {
		if strings.HasSuffix(host, s) {
			return "in the special-use domain " + s[1:]
		}
	}
	return ""
}

var ipv6Global = ssrf.IPv6GlobalUnicast

// specialUse names the special-use range a holds, or "" for a public
// address. The ranges are those the dialer refuses (code.dny.dev/ssrf's
// IANA registries), so a target accepted here is one it can reach.
func specialUse(a netip.Addr) string {
	a = a.Unmap()
	if a.Is4() {
		for _, p := range ssrf.IPv4DeniedPrefixes {
			if p.Contains(a) {
				return "in the special-use range " + p.String()
			}
		}
		return ""
	}
	if ssrf.IPv6NAT64Prefix.Contains(a) {
		b := a.As16()
		return specialUse(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if !ipv6Global.Contains(a) {
		return "outside IPv6 global unicast"
	}
	for _, p := range ssrf.IPv6DeniedPrefixes {
		if p.Contains(a) {
			return "in the special-use range " + p.String()
		}
	}
	return ""
}
