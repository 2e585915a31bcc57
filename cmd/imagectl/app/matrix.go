package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this verb): replace this placeholder with the real command.
func newMatrixCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "matrix",
		Short:  "(not implemented yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("matrix: not implemented yet")
		},
	}
}
