// Package docs embeds the service's published contract, docs/openapi.yaml,
// so the local server can serve it and the tests can check the service
// against exactly the bytes in the repository.
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
