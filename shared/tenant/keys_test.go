package tenant

import (
	"strings"
	"testing"
)

func TestNewKeySecret(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		k, err := NewKeySecret(EnvLive)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(k, "yp_live_") || len(k) != len("yp_live_")+43 || EnvironmentOfKey(k) != EnvLive {
			t.Fatalf("key %q", k)
		}
		for _, c := range k[8:] {
			if !strings.ContainsRune(base62, c) {
				t.Fatalf("non-base62 %q", c)
			}
		}
		if seen[k] {
			t.Fatal("duplicate key")
		}
		seen[k] = true
	}
	if EnvironmentOfKey("yp_prod_x") != "" || EnvironmentOfKey("") != "" {
		t.Fatal("unknown prefix accepted")
	}
}

func TestHashAndHint(t *testing.T) {
	h := HashKey("yp_test_abc")
	if len(h) != 64 || h == HashKey("yp_test_abd") {
		t.Fatal(h)
	}
	k := "yp_test_" + strings.Repeat("a", 39) + "WXYZ"
	if hint := KeyHint(k); hint != "yp_test_…WXYZ" || strings.Contains(hint, "aaaa") {
		t.Fatalf("hint %q", hint)
	}
	s, err := NewWebhookSecret()
	if err != nil || !strings.HasPrefix(s, "whsec_") || len(s) < 6+32 {
		t.Fatal(s, err)
	}
}

func TestKeyPermissions(t *testing.T) {
	k := APIKey{Permissions: []Permission{PermConfig}, SiteIDs: []string{"s1"}}
	if !k.Allows(PermConfig) || k.Allows(PermPayments) || !k.AllowsSite("s1") || k.AllowsSite("s2") {
		t.Fatal("permission helpers")
	}
	if !(APIKey{}).AllowsSite("any") {
		t.Fatal("unrestricted key")
	}
}
