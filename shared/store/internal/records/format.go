package records

import (
	"fmt"
	"strconv"

	"github.com/yp/paysvc/shared/storeerr"
)

// Version is the format version of every stored record this release
// writes, and the only one it reads; a record stored without one is
// version 1.
const Version = 1

// Format is a record's format version, its "format" field: written as
// Version, and read as Version or absent. Any other version fails the
// read with storeerr.ErrUnknownFormat, so a record of a format this release
// does not know is never misread (docs/operations.md, "Changing a stored
// format").
type Format struct{}

// MarshalJSON writes Version.
func (Format) MarshalJSON() ([]byte, error) { return []byte(strconv.Itoa(Version)), nil }

// UnmarshalJSON accepts Version only.
func (*Format) UnmarshalJSON(b []byte) error { return CheckVersion(string(b)) }

// CheckVersion fails with storeerr.ErrUnknownFormat unless v, a version as
// stored, is Version.
func CheckVersion(v string) error {
	if v != strconv.Itoa(Version) {
		return fmt.Errorf("format version %s: %w", v, storeerr.ErrUnknownFormat)
	}
	return nil
}
