package target

import (
	"errors"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		url        string
		allowLocal bool
		ok, local  bool
	}{
		{"https://hooks.shop.example/paysvc", false, true, false},
		{"https://hooks.shop.example:443/x?y=1", false, true, false},
		{"https://93.184.215.14/", false, true, false},
		{"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]/", false, true, false},
		{"https://[64:ff9b::5db8:d70e]/", false, true, false}, // NAT64 of a public address

		// Scheme, port, shape.
		{"http://hooks.shop.example/", false, false, false},
		{"https://hooks.shop.example:8443/", false, false, false},
		{"ftp://hooks.shop.example/", false, false, false},
		{"hooks.shop.example/x", false, false, false},
		{"https://user:pw@hooks.shop.example/", false, false, false},
		{"https://hooks.shop.example/#frag", false, false, false},
		{"https:///x", false, false, false},

		// Loopback in every spelling.
		{"https://127.0.0.1/", false, false, false},
		{"https://2130706433/", false, false, false},
		{"https://0177.0.0.1/", false, false, false},
		{"https://0x7f000001/", false, false, false},
		{"https://0x7f.0.0.1/", false, false, false},
		{"https://127.1/", false, false, false},
		{"https://127.0.1/", false, false, false},
		{"https://[::1]/", false, false, false},
		{"https://[::ffff:127.0.0.1]/", false, false, false},
		{"https://localhost/", false, false, false},
		{"https://LOCALHOST./", false, false, false},
		{"https://api.localhost/", false, false, false},
		{"https://ip6-localhost/", false, false, false},
		{"https://ip6-loopback/", false, false, false},

		// Unspecified, private, CGNAT, link-local, metadata, multicast, documentation, benchmarking.
		{"https://0/", false, false, false},
		{"https://0.0.0.0/", false, false, false},
		{"https://[::]/", false, false, false},
		{"https://10.0.0.5/", false, false, false},
		{"https://012.0.0.5/", false, false, false}, // octal 10.0.0.5
		{"https://172.16.3.4/", false, false, false},
		{"https://192.168.1.1/", false, false, false},
		{"https://3232235777/", false, false, false}, // 192.168.1.1
		{"https://100.64.0.1/", false, false, false},
		{"https://169.254.169.254/latest", false, false, false},
		{"https://[fd00:ec2::254]/", false, false, false},
		{"https://[fe80::1%25eth0]/", false, false, false},
		{"https://[fc00::1]/", false, false, false},
		{"https://224.0.0.1/", false, false, false},
		{"https://[ff02::1]/", false, false, false},
		{"https://192.0.2.10/", false, false, false},
		{"https://198.51.100.7/", false, false, false},
		{"https://203.0.113.9/", false, false, false},
		{"https://[2001:db8::1]/", false, false, false},
		{"https://198.18.0.1/", false, false, false},
		{"https://255.255.255.255/", false, false, false},
		{"https://[64:ff9b::7f00:1]/", false, false, false}, // NAT64 of 127.0.0.1
		{"https://[2002:7f00:1::]/", false, false, false},   // 6to4
		{"https://metadata.google.internal/computeMetadata/v1/", false, false, false},
		{"https://METADATA.GOOGLE.INTERNAL./", false, false, false},
		{"https://metadata/", false, false, false},
		{"https://instance-data/", false, false, false},
		{"https://printer.local/", false, false, false},
		{"https://db.internal/", false, false, false},
		{"https://router.home.arpa/", false, false, false},
		{"https://intranet/", false, false, false},

		// Development: loopback only, any port, http allowed; private stays refused.
		{"http://127.0.0.1:9000/hook", true, true, true},
		{"http://localhost:9000/hook", true, true, true},
		{"https://[::1]:8443/", true, true, true},
		{"http://10.0.0.5:8080/x", true, false, false},
		{"https://169.254.169.254/", true, false, false},
		{"ftp://127.0.0.1/", true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			got, err := Check(tt.url, tt.allowLocal)
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Local != tt.local || got.URL == nil {
					t.Fatalf("got %+v, want local=%v", got, tt.local)
				}
				return
			}
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("accepted (%+v, %v), want refused", got, err)
			}
		})
	}
}

func TestParseHostNumericForms(t *testing.T) {
	tests := map[string]string{
		"2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1", "0177.0.0.1": "127.0.0.1",
		"127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "0": "0.0.0.0", "1.2.3.4": "1.2.3.4",
		"0x7f.0x0.0.01": "127.0.0.1", "10.65535": "10.0.255.255",
	}
	for in, want := range tests {
		a, ok := parseHost(in)
		if !ok || a.String() != want {
			t.Errorf("parseHost(%q) = %v %v, want %s", in, a, ok, want)
		}
	}
	for _, in := range []string{"1.2.3.4.5", "256.1.1.1", "1.2.3.256", "10.16777216", "08.1.1.1", "shop.example", "0x", ""} {
		if a, ok := parseHost(in); ok {
			t.Errorf("parseHost(%q) = %v, want not an address", in, a)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"https://hooks.shop.example/", "https://2130706433/", "http://127.0.0.1:9/", "https://[::ffff:10.0.0.1]/", "https://0x7f.1/"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, allowLocal bool) {
		got, err := Check(raw, allowLocal)
		if err != nil {
			return
		}
		// Whatever is accepted is https on 443 to a non-special address, or
		// an allowed local target.
		if got.Local {
			if !allowLocal {
				t.Fatalf("%q accepted as local without allowLocal", raw)
			}
			return
		}
		if got.URL.Scheme != "https" || (got.URL.Port() != "" && got.URL.Port() != "443") {
			t.Fatalf("%q accepted: %v", raw, got.URL)
		}
		if a, isIP := parseHost(got.URL.Hostname()); isIP && specialUse(a) != "" {
			t.Fatalf("%q accepted a special-use address %v", raw, a)
		}
	})
}
