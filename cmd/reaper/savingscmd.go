package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// savingsPeriod is what sleeping saved an app (or all of them) over a period.
type savingsPeriod struct {
	AsleepSeconds float64 `json:"asleep_seconds"`
	Money         float64 `json:"money"`
	GiBHours      float64 `json:"gib_hours"`
}

// appSavings is one app of /api/savings.
type appSavings struct {
	AppID            string        `json:"app_id"`
	Asleep           bool          `json:"asleep"`
	Currency         string        `json:"currency"`
	PricePerHour     float64       `json:"price_per_hour"`
	GiB              float64       `json:"gib"`
	Today            savingsPeriod `json:"today"`
	Month            savingsPeriod `json:"month"`
	AllTime          savingsPeriod `json:"all_time"`
	SavingNowPerHour float64       `json:"saving_now_per_hour"`
}

// savings is the answer of /api/savings.
type savings struct {
	Apps  []appSavings `json:"apps"`
	Total struct {
		Currency         string        `json:"currency"`
		Today            savingsPeriod `json:"today"`
		Month            savingsPeriod `json:"month"`
		AllTime          savingsPeriod `json:"all_time"`
		SavingNowPerHour float64       `json:"saving_now_per_hour"`
	} `json:"total"`
}

func savingsCmd(ctx context.Context, args []string, env func(string) (string, bool), stdout, stderr io.Writer) error {
	c, fs := newCLI("savings", "savings [options]",
		"Shows what sleeping saved, per app and in all: today, this month, all time (with\n"+
			"the time asleep), and what sleeping saves per hour now.", env, stdout, stderr)
	if _, err := c.parse(fs, args, 0, 0); err != nil {
		return err
	}
	var s savings
	raw, err := c.get(ctx, "/api/savings", &s)
	if err != nil {
		return err
	}
	if c.json {
		return c.printJSON(raw)
	}
	printSavings(stdout, s)
	return nil
}

// printSavings prints the savings as a table, the total last.
func printSavings(w io.Writer, s savings) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tASLEEP\tPRICE\tTODAY\tMONTH\tALL TIME\tSAVING NOW")
	for _, a := range s.Apps {
		asleep := "no"
		if a.Asleep {
			asleep = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.AppID, asleep, perHour(a.PricePerHour, a.Currency),
			period(a.Today, a.Currency), period(a.Month, a.Currency), period(a.AllTime, a.Currency), perHour(a.SavingNowPerHour, a.Currency))
	}
	t := s.Total
	fmt.Fprintf(tw, "TOTAL\t\t\t%s\t%s\t%s\t%s\n", period(t.Today, t.Currency), period(t.Month, t.Currency),
		period(t.AllTime, t.Currency), perHour(t.SavingNowPerHour, t.Currency))
	tw.Flush()
}

// period prints a period's saving and how long the app slept in it: "1.20 EUR (20h)".
func period(p savingsPeriod, currency string) string {
	out := money(p.Money, currency)
	if p.AsleepSeconds > 0 {
		out += " (" + short(time.Duration(p.AsleepSeconds*float64(time.Second))) + ")"
	}
	return out
}

// perHour prints an amount per hour, to the ten-thousandth (prices per hour
// are small), "-" for none.
func perHour(v float64, currency string) string {
	if v == 0 {
		return "-"
	}
	return strings.TrimSpace(fmt.Sprintf("%.4f %s", v, currency)) + "/h"
}
