package views

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"admit/store"
)

// capInputRE matches a cap's number input and captures its name, min and
// max.
// capInputRE finds a cap's number input, whatever the order of its
// attributes: its name, then its min and max.
var capInputRE = regexp.MustCompile(`<input [^>]*?name="(queueCap|hourlyCap|seatCap)" type="number"[^>]*? min="([^"]*)" max="([^"]*)"`)

// TestCapInputs_OfferTheStoresRange holds both owner forms that set a
// program's caps (create and settings) to the store's range, so the
// browser's own check never differs from the store's.
func TestCapInputs_OfferTheStoresRange(t *testing.T) {
	for name, render := range map[string]func(*strings.Builder) error{
		"create": func(b *strings.Builder) error {
			return CreateProgramForm(Chrome{}, OwnerHomeView{}).Render(context.Background(), b)
		},
		"settings": func(b *strings.Builder) error {
			return settingsForm(Chrome{}, ProgramPageView{}).Render(context.Background(), b)
		},
	} {
		var b strings.Builder
		if err := render(&b); err != nil {
			t.Fatalf("%s: render: %v", name, err)
		}
		inputs := capInputRE.FindAllStringSubmatch(b.String(), -1)
		if len(inputs) != 3 {
			t.Fatalf("%s: %d cap inputs with min and max, want 3:\n%s", name, len(inputs), b.String())
		}
		for _, in := range inputs {
			if in[2] != strconv.Itoa(store.MinProgramCap) || in[3] != strconv.Itoa(store.MaxProgramCap) {
				t.Errorf("%s: %s offers %s..%s, want %d..%d", name, in[1], in[2], in[3], store.MinProgramCap, store.MaxProgramCap)
			}
		}
	}
}
