// Package report holds what a load run measured and writes it as text, Markdown tables and SVG charts.
package report
