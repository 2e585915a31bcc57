package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this verb): replace this placeholder with the real command.
func newSignCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "sign",
		Short:  "(not implemented yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("sign: not implemented yet")
		},
	}
}
