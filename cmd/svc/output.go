package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// outputFormats are what -o takes on every command that prints records:
// a table of the main columns, a wide table of every field, JSON, or YAML.
func outputFormats() []string { return []string{"table", "wide", "json", "yaml"} }

// addOutputFlag binds -o with its default format.
func addOutputFlag(cmd *cobra.Command, g *globals, dflt string) {
	cmd.Flags().StringVarP(&g.output, "output", "o", dflt, "output format: "+strings.Join(outputFormats(), ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats(), cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput refuses an -o value that is not a format.
func checkOutput(format string) error {
	if !slices.Contains(outputFormats(), format) {
		return usageErrorf("-o %q: use %s", format, strings.Join(outputFormats(), ", "))
	}
	return nil
}

// printOut prints v (a record, or an api.List of them) in a format; table
// prints the main columns (nil: the wide table).
func printOut(w io.Writer, format string, v any, table func(io.Writer) error) error {
	switch format {
	case "json":
		return printJSON(w, v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("print: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "table":
		if table != nil {
			return table(w)
		}
	}
	return printWide(w, v)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	return nil
}

// printWide prints every field of the records as a column (a list's items,
// or the one record), in the order the API sends them; nested values are
// compact JSON.
func printWide(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	records := []json.RawMessage{b}
	if json.Unmarshal(b, &list) == nil && list.Items != nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"items"`)) {
		records = list.Items
	}
	var header []string
	var rows [][]string
	for _, r := range records {
		keys, vals, err := orderedFields(r)
		if err != nil {
			return fmt.Errorf("print: %w", err)
		}
		if header == nil {
			header = keys
		}
		row := make([]string, len(header))
		for i, k := range header {
			row[i] = vals[k]
		}
		rows = append(rows, row)
	}
	upper := make([]string, len(header))
	for i, h := range header {
		upper[i] = strings.ToUpper(h)
	}
	return printTable(w, upper, rows)
}

// orderedFields reads a JSON object's keys in order and each value as text.
func orderedFields(obj json.RawMessage) ([]string, map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a record: %s", obj)
	}
	var keys []string
	vals := map[string]string{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			vals[k] = s
		} else if string(raw) == "null" {
			vals[k] = ""
		} else {
			vals[k] = string(raw)
		}
	}
	return keys, vals, nil
}

// printTable prints rows under a header, aligned in columns.
func printTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	return nil
}
