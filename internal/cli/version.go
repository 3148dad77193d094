package cli

import (
	"fmt"
	"io"

	"admit/internal/version"
)

// versionCmd is `admit version`: the build's version, commit and Go
// toolchain.
func versionCmd(stdout io.Writer) error {
	_, err := fmt.Fprintln(stdout, version.Get())
	return err
}
