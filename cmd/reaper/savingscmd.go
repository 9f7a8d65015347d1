package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/reapergw/reaper/reaper"
)

func savingsCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("savings", "savings [ID] [options]",
		"Shows what sleeping saved, per app and in all (or for one app): the time each app\n"+
			"slept because reaper put it to sleep today, this month and all time (UTC), priced\n"+
			"with what the driver says the app costs awake, and what its sleep saves per hour\n"+
			"now. Apps without a price show the time asleep and the memory-hours freed.", env, stdout, stderr)
	pos, err := c.parse(fs, args, 0, 1)
	if err != nil {
		return err
	}
	var s reaper.SavingsAnswer
	raw, err := c.do(ctx, func(ctx context.Context) (err error) {
		if len(pos) == 0 {
			s, err = c.api.Savings(ctx)
			return err
		}
		var one reaper.SavingsView
		one, err = c.api.AppSavings(ctx, pos[0])
		s.Apps = []reaper.SavingsView{one}
		return err
	})
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	printSavings(stdout, s, len(pos) == 0)
	return nil
}

// printSavings prints the savings as a table, with the total last when total.
func printSavings(w io.Writer, s reaper.SavingsAnswer, total bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tASLEEP\tPRICE\tMEMORY\tTODAY\tMONTH\tALL TIME\tSAVING NOW")
	for _, a := range s.Apps {
		asleep, mem := "no", "-"
		if a.Asleep {
			asleep = "yes"
		}
		switch {
		case a.GiB >= 1:
			mem = fmt.Sprintf("%.3g GiB", a.GiB)
		case a.GiB > 0:
			mem = fmt.Sprintf("%.0f MiB", a.GiB*1024)
		}
		cur := currency(a.Currency, a.PricePerHour > 0)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.AppID, asleep, perHour(a.PricePerHour, cur), mem,
			period(a.Today, cur), period(a.Month, cur), period(a.AllTime, cur), perHour(a.SavingNowPerHour, cur))
	}
	if total {
		t := s.Total
		cur := currency(t.Currency, t.Currency != "" && t.Currency != "mixed")
		fmt.Fprintf(tw, "TOTAL\t\t\t\t%s\t%s\t%s\t%s\n", period(t.Today, cur), period(t.Month, cur),
			period(t.AllTime, cur), perHour(t.SavingNowPerHour, cur))
	}
	tw.Flush()
}

// currency is the currency to print amounts in, "" when they are not priced.
func currency(c string, priced bool) string {
	if !priced {
		return ""
	}
	return c
}

// period prints a period's saving: its money when priced (currency not empty),
// the time asleep, and unpriced the memory-hours freed: "1.20 EUR (20h)",
// "20h (40 GiB·h)", "-" for nothing.
func period(p reaper.SavedPeriod, currency string) string {
	asleep := ""
	if p.AsleepSeconds > 0 {
		asleep = short(time.Duration(p.AsleepSeconds * float64(time.Second)))
	}
	switch {
	case currency != "" && asleep != "":
		return money(p.Money, currency) + " (" + asleep + ")"
	case currency != "":
		return money(p.Money, currency)
	case asleep != "" && p.GiBHours > 0:
		return fmt.Sprintf("%s (%.3g GiB·h)", asleep, p.GiBHours)
	case asleep != "":
		return asleep
	}
	return "-"
}

// perHour prints an amount per hour, to the ten-thousandth (prices per hour
// are small), "-" for none or when not priced.
func perHour(v float64, currency string) string {
	if v == 0 || currency == "" {
		return "-"
	}
	return strings.TrimSpace(fmt.Sprintf("%.4f %s", v, currency)) + "/h"
}
