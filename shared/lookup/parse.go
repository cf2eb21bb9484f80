package lookup

import (
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/webhooks"
)

// Page sizes of the lists.
const (
	DefaultLimit = 10
	MaxLimit     = 100
)

// EventsInput is a validated GET events query.
type EventsInput struct {
	Limit         int
	StartingAfter string // an event id
	PSPReference  string
	EventCode     string
}

// DeliveriesInput is a validated GET webhook-deliveries query.
type DeliveriesInput struct {
	Limit         int
	StartingAfter string // a delivery id
	Status        webhooks.Status
}

var (
	idPattern        = regexp.MustCompile(`^[A-Za-z0-9_]{1,64}$`)
	eventCodePattern = regexp.MustCompile(`^[A-Z_]{1,64}$`)
)

// query reads the parameters of one list strictly: each known at most
// once, none unknown, every problem named.
type query struct {
	v    url.Values
	errs []apperr.FieldError
}

func newQuery(v url.Values, known ...string) *query {
	q := &query{v: v}
	var names []string
	for name := range v {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case !slices.Contains(known, name):
			q.fail(name, "unknown query parameter")
		case len(v[name]) > 1:
			q.fail(name, "must be given once")
		}
	}
	return q
}

func (q *query) fail(field, msg string) {
	q.errs = append(q.errs, apperr.FieldError{Field: field, Message: msg})
}

// str returns parameter name when present and matching pattern.
func (q *query) str(name string, pattern *regexp.Regexp, rule string) string {
	s, ok := q.v[name]
	if !ok {
		return ""
	}
	if !pattern.MatchString(s[0]) {
		q.fail(name, rule)
		return ""
	}
	return s[0]
}

func (q *query) limit() int {
	s, ok := q.v["limit"]
	if !ok {
		return DefaultLimit
	}
	n, err := strconv.Atoi(s[0])
	if err != nil || n < 1 || n > MaxLimit {
		q.fail("limit", "must be an integer from 1 to "+strconv.Itoa(MaxLimit))
		return DefaultLimit
	}
	return n
}

func (q *query) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	return apperr.InvalidFields(q.errs)
}

// ParseEvents validates GET events' query: limit (1–100, default 10),
// startingAfter, pspReference, eventCode.
func ParseEvents(v url.Values) (EventsInput, error) {
	q := newQuery(v, "limit", "startingAfter", "pspReference", "eventCode")
	in := EventsInput{
		Limit:         q.limit(),
		StartingAfter: q.str("startingAfter", idPattern, "must be an event id"),
		PSPReference:  q.str("pspReference", idPattern, "must be 1 to 64 letters, digits or _"),
		EventCode:     q.str("eventCode", eventCodePattern, "must be an event code such as CAPTURE"),
	}
	return in, q.err()
}

// ParseDeliveries validates GET webhook-deliveries' query: status, limit
// (1–100, default 10), startingAfter.
func ParseDeliveries(v url.Values) (DeliveriesInput, error) {
	q := newQuery(v, "status", "limit", "startingAfter")
	in := DeliveriesInput{Limit: q.limit(), StartingAfter: q.str("startingAfter", idPattern, "must be a webhook delivery id")}
	if s, ok := v["status"]; ok {
		if st := webhooks.Status(s[0]); st.Valid() {
			in.Status = st
		} else {
			q.fail("status", "must be one of pending, failed, disabled, delivered")
		}
	}
	return in, q.err()
}

// cursorPattern is a timeline cursor as the stores make them.
var cursorPattern = regexp.MustCompile(`^[A-Za-z0-9#:._\-]{1,200}$`)

// ParseTimeline validates GET payments/{pspReference}/timeline's query:
// startingAfter, the Next of the page before.
func ParseTimeline(v url.Values) (cursor string, _ error) {
	q := newQuery(v, "startingAfter")
	cursor = q.str("startingAfter", cursorPattern, "must be the next of the timeline page before")
	return cursor, q.err()
}
