package admincli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// flagSet is one command's flags: a flag.FlagSet that remembers the order
// flags were defined in (for the help text) and carries --json.
type flagSet struct {
	*flag.FlagSet
	path        string // command path, e.g. "merchant create"
	synopsis    string // what follows the command path in the usage line
	description string
	order       []string
	stdout      io.Writer
	json        *bool
	set         map[string]bool // the flags given on the command line
}

// newFlags returns the flags of the command at path. synopsis is the usage
// line after the command (e.g. "--id ID [flags]"); description is the help
// paragraph.
func (c *cli) newFlags(path, synopsis, description string) *flagSet {
	f := &flagSet{
		FlagSet: flag.NewFlagSet(prog+" "+path, flag.ContinueOnError),
		path:    path, synopsis: synopsis, description: description, stdout: c.stdout,
	}
	f.SetOutput(io.Discard) // parse errors become usage errors; -h prints to stdout
	// --json is not in order: printUsage lists it last, as common to every command.
	f.json = f.Bool("json", false, "print the result as JSON on stdout")
	return f
}

func (f *flagSet) str(name, def, usage string) *string {
	f.order = append(f.order, name)
	return f.String(name, def, usage)
}

func (f *flagSet) boolean(name string, def bool, usage string) *bool {
	f.order = append(f.order, name)
	return f.Bool(name, def, usage)
}

func (f *flagSet) integer(name string, def int, usage string) *int {
	f.order = append(f.order, name)
	return f.Int(name, def, usage)
}

func (f *flagSet) int64(name string, def int64, usage string) *int64 {
	f.order = append(f.order, name)
	return f.Int64(name, def, usage)
}

func (f *flagSet) duration(name string, def time.Duration, usage string) *time.Duration {
	f.order = append(f.order, name)
	return f.Duration(name, def, usage)
}

// parse parses args and checks that every flag named in required has a
// non-empty value. -h prints the help on stdout and returns flag.ErrHelp;
// any other problem is a usage error. Commands take no positional arguments.
func (f *flagSet) parse(args []string, required ...string) error {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			f.printUsage(f.stdout)
			return flag.ErrHelp
		}
		return usagef(f.path, "%v", err)
	}
	if f.NArg() > 0 {
		return usagef(f.path, "unexpected argument %q (every value is given with a --flag)", f.Arg(0))
	}
	f.set = map[string]bool{}
	f.Visit(func(fl *flag.Flag) { f.set[fl.Name] = true })
	var missing []string
	for _, name := range required {
		if strings.TrimSpace(f.Lookup(name).Value.String()) == "" {
			missing = append(missing, "--"+name)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return usagef(f.path, "%s is required", missing[0])
	}
	return usagef(f.path, "%s are required", strings.Join(missing, ", "))
}

// printUsage prints the command's help.
func (f *flagSet) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s %s %s\n\n%s\n\nFlags:\n", prog, f.path, f.synopsis, f.description)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	for _, name := range append(slices.Clone(f.order), "json") {
		fl := f.Lookup(name)
		typ, usage := flag.UnquoteUsage(fl) // "" for a bool flag without a `NAME`
		switch typ {
		case "string":
			typ = "TEXT"
		case "int":
			typ = "N"
		case "duration":
			typ = "DURATION"
		case "value":
			typ = ""
		default:
			if strings.Trim(typ, "abcdefghijklmnopqrstuvwxyz-") == "" {
				typ = strings.ToUpper(typ) // a placeholder such as `account`
			}
		}
		if def := defaultText(fl); def != "" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintf(tw, "  --%s %s\t%s\n", name, typ, usage)
	}
	_ = tw.Flush()
}

// defaultText is a flag's default as shown in the help, or "" for a zero
// default.
func defaultText(fl *flag.Flag) string {
	def := fl.DefValue
	switch def {
	case "", "0", "false", "0s":
		return ""
	}
	if _, ok := fl.Value.(interface{ Get() any }).Get().(time.Duration); ok {
		if strings.HasSuffix(def, "m0s") {
			def = strings.TrimSuffix(def, "0s")
		}
		if strings.HasSuffix(def, "h0m") {
			def = strings.TrimSuffix(def, "0m")
		}
	}
	if strings.ContainsRune(def, ' ') {
		def = strconv.Quote(def)
	}
	return def
}

// anySetExcept reports whether any flag other than --json and except was
// given.
func (f *flagSet) anySetExcept(except ...string) bool {
	for name := range f.set {
		if name != "json" && !slices.Contains(except, name) {
			return true
		}
	}
	return false
}

// splitList splits a comma-separated flag value, trimming spaces and
// dropping empty items and duplicates.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item != "" && !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return out
}
