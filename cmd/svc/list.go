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
			if g.output == "json" {
				if items == nil {
					items = []T{}
				}
				return printJSON(cmd.OutOrStdout(), api.List[T]{Items: items})
			}
			return table(cmd.OutOrStdout(), items)
		},
	}
	cmd.Flags().StringVarP(&g.output, "output", "o", "table", "output format: table or json")
	return cmd
}
