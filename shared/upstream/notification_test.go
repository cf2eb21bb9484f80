package upstream

import (
	"encoding/json"
	"maps"
	"testing"
)

func TestNotificationAdditionalDataAcceptsNonStrings(t *testing.T) {
	tests := []struct {
		name string
		ad   string
		want map[string]string
	}{
		{"strings", `{"authCode":"123456","metadata.merchantId":"m_a"}`, map[string]string{"authCode": "123456", "metadata.merchantId": "m_a"}},
		{"metadata object is flattened", `{"metadata":{"merchantId":"m_a","siteId":"s_1"}}`, map[string]string{"metadata.merchantId": "m_a", "metadata.siteId": "s_1"}},
		{"nested object", `{"a":{"b":{"c":"d"}}}`, map[string]string{"a.b.c": "d"}},
		{"number bool null array kept as JSON", `{"n":6,"b":true,"z":null,"l":["x",1]}`, map[string]string{"n": "6", "b": "true", "z": "null", "l": `["x",1]`}},
		{"null additionalData", `null`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":` + tt.ad +
				`,"amount":{"value":1000,"currency":"EUR"},"eventCode":"AUTHORISATION","eventDate":"2026-01-01T00:00:00Z","merchantAccountCode":"M","merchantReference":"r","pspReference":"P","success":"true"}}]}`
			var n Notification
			if err := json.Unmarshal([]byte(body), &n); err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := n.NotificationItems[0].Item.AdditionalData
			if !maps.Equal(map[string]string(got), tt.want) {
				t.Errorf("additionalData = %v, want %v", got, tt.want)
			}
		})
	}
	var n Notification
	if err := json.Unmarshal([]byte(`{"notificationItems":[{"NotificationRequestItem":{"additionalData":[1]}}]}`), &n); err == nil {
		t.Error("an additionalData that is not an object was accepted")
	}
}
