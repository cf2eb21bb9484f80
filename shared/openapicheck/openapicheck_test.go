package openapicheck_test

import (
	"testing"

	"github.com/yp/paysvc/shared/openapicheck"
)

func TestRepositoryDocumentBuilds(t *testing.T) {
	c, err := openapicheck.Repository()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(c.Operations())
}
