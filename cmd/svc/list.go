package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/svc-project/svc/api"
)

// newListCmd is 'svc <kind> list': the records fetch returns, as a table
// (printed by table) or, with -o json, as the API's {"items": [...]}.
func newListCmd[T any](g *globals, short string, fetch func(ctx context.Context, cl *api.Client) ([]T, error), table func(io.Writer, []T) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := g.clientFor()
			if err != nil {
				return err
			}
			items, err := fetch(cmd.Context(), cl)
			if err != nil {
				return err
			}
			if items == nil {
				items = []T{}
			}
			return printOut(cmd.OutOrStdout(), g.output, api.List[T]{Items: items}, func(w io.Writer) error { return table(w, items) })
		},
	}
	addOutputFlag(cmd, g, "table")
	return cmd
}
