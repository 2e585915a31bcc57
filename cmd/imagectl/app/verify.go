package app

import (
	"errors"

	"github.com/spf13/cobra"
)

// TODO(owner of this verb): replace this placeholder with the real command.
func newVerifyCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:    "verify",
		Short:  "(not implemented yet)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return errors.New("verify: not implemented yet")
		},
	}
}
