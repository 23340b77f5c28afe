/* raidkit bench reports as pictures: one SVG bar chart per job (means with standard-error
 * whiskers, host-bound and comparison rows coloured apart) and the self-contained HTML page that
 * holds them with the result tables and the text report. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/render.h"

/* Text escaped for XML/HTML content and attributes. */
static void render_xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

/* A "nice" axis maximum (1, 2, 2.5, 5 x 10^k) at or above v. */
static double render_axis_max(double v)
{
    if (v <= 0)
        return 1.0;
    double p = pow(10.0, floor(log10(v)));
    static const double steps[] = {1.0, 2.0, 2.5, 5.0, 10.0};
    for (int i = 0; i < 5; i++)
        if (steps[i] * p >= v)
            return steps[i] * p;
    return 10.0 * p;
}

static const char *render_color(const struct bench_config *c, bool host_bound)
{
    if (!strcmp(c->kind, "noop"))
        return "#9aa0a6";
    if (host_bound)
        return "#a8c7e8";
    if (!strcmp(c->kind, "raidkit"))
        return "#2f6db5";
    return "#e08a2c"; /* comparison rows: nbdkit, btrfs */
}

/* Jobs of one workload family (same tool, unit and block size: the 16KB random pair, the 1MB
 * sequential pair) share one chart scale. */
static bool render_same_family(const struct bench_job *a, const struct bench_job *b)
{
    return !strcmp(a->tool, b->tool) && !strcmp(a->unit, b->unit) && a->bs == b->bs;
}

/* The largest mean + SE (and model prediction) over the jobs of job's family. */
static double render_family_max(const struct bench_report *r, int job)
{
    double max = 0.0;
    for (int j = 0; j < r->suite->njobs; j++) {
        if (!render_same_family(&r->suite->jobs[j], &r->suite->jobs[job]))
            continue;
        for (int c = 0; c < r->nconfigs; c++) {
            if (!render_has_row(r, c, j))
                continue;
            const struct bench_cell *cell = &r->cells[c][j];
            double top = cell->mean + cell->se;
            if (top > max)
                max = top;
            if (cell->model_mbs > max)
                max = cell->model_mbs;
        }
    }
    return max;
}

int bench_render_svg(const struct bench_report *r, int job, FILE *f)
{
    const struct bench_job *bj = &r->suite->jobs[job];
    int rows = 0;
    for (int c = 0; c < r->nconfigs; c++)
        rows += render_has_row(r, c, job);
    double max = render_family_max(r, job);
    const int W = 760, left = 150, right = 120, top = 56, rowh = 30, barh = 18;
    const int plotw = W - left - right;
    const int H = top + rows * rowh + 62;
    double amax = render_axis_max(max);
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\" "
            "role=\"img\">\n",
            W, H, W, H);
    fputs("<title>", f);
    render_xml(f, bj->title);
    fputs("</title>\n", f);
    fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", W, H);
    char bs[16];
    render_bs(bj->bs, bs, sizeof(bs));
    fprintf(f, "<text x=\"12\" y=\"22\" font-size=\"15\" font-weight=\"bold\">");
    render_xml(f, bj->title);
    fprintf(f, " &#8212; %s, iodepth %d</text>\n", bs, bj->iodepth);
    fprintf(f,
            "<text x=\"12\" y=\"40\" fill=\"#555\">%s, %s is better; mean &#177; standard "
            "error of the trials",
            bj->unit[0] ? bj->unit : "MB/s", bj->lower_better ? "lower" : "higher");
    if (r->model_name[0]) {
        fputs(" &#183; model ", f);
        render_xml(f, r->model_name);
    }
    fputs("</text>\n", f);
    /* Grid lines and axis labels at fifths of the axis. */
    for (int g = 0; g <= 5; g++) {
        double x = left + plotw * g / 5.0;
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e3e3e3\"/>\n"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">%g</text>\n",
                x, top - 4, x, top + rows * rowh, x, top + rows * rowh + 16, amax * g / 5.0);
    }
    /* Axis titles: the measured unit under the axis, the rows along the left. */
    fprintf(f,
            "<text class=\"axis-title\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" "
            "fill=\"#444\">%s (shared scale of the %s jobs)</text>\n",
            left + plotw / 2.0, top + rows * rowh + 34, bj->unit[0] ? bj->unit : "MB/s",
            bj->tool[0] ? bj->tool : "same block size");
    fprintf(f,
            "<text class=\"axis-title\" x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
            "fill=\"#444\" transform=\"rotate(-90 14 %.1f)\">Configuration</text>\n",
            top + rows * rowh / 2.0, top + rows * rowh / 2.0);
    int row = 0;
    for (int c = 0; c < r->nconfigs; c++) {
        if (!render_has_row(r, c, job))
            continue;
        const struct bench_cell *cell = &r->cells[c][job];
        double y = top + row * rowh + (rowh - barh) / 2.0;
        double w = cell->mean / amax * plotw;
        double elo = (cell->mean - cell->se) / amax * plotw + left;
        double ehi = (cell->mean + cell->se) / amax * plotw + left;
        if (elo < left)
            elo = left;
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", left - 8, y + barh - 4);
        render_xml(f, r->configs[c].label);
        fprintf(f, "</text>\n");
        fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left,
                y, w, barh, render_color(&r->configs[c], cell->host_bound));
        /* Error bar: mean +- standard error. */
        fprintf(f,
                "<g stroke=\"#222\" stroke-width=\"1.2\"><line x1=\"%.1f\" y1=\"%.1f\" "
                "x2=\"%.1f\" y2=\"%.1f\"/><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>\n",
                elo, y + barh / 2.0, ehi, y + barh / 2.0, elo, y + 4.0, elo, y + barh - 4.0, ehi,
                y + 4.0, ehi, y + barh - 4.0);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%.2f &#177; %.2f%s%s</text>\n", ehi + 6,
                y + barh - 4, cell->mean, cell->se, cell->host_bound ? " *" : "",
                render_noisy(cell) ? " ~" : "");
        if (cell->model_mbs > 0) /* the prediction: a tick on the bar's row */
            fprintf(f,
                    "<line class=\"model\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                    "stroke=\"#c0392b\" stroke-width=\"2\"/>\n",
                    left + cell->model_mbs / amax * plotw, y - 2.0,
                    left + cell->model_mbs / amax * plotw, y + barh + 2.0);
        row++;
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#444\"/>\n", left, top - 4,
            left, top + rows * rowh);
    bool hb = false;
    for (int c = 0; c < r->nconfigs; c++)
        hb |= render_has_row(r, c, job) && r->cells[c][job].host_bound;
    if (hb)
        fprintf(f, "<text x=\"12\" y=\"%d\" fill=\"#555\">* %s</text>\n", H - 8,
                RENDER_HOST_BOUND_NOTE);
    fputs("</svg>\n", f);
    return ferror(f) ? -EIO : 0;
}

static const char render_css[] =
    "body{font-family:Helvetica,Arial,sans-serif;margin:24px auto;max-width:1000px;color:#222;"
    "line-height:1.4;padding:0 16px}"
    "h1{font-size:24px;margin-bottom:4px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid "
    "#ddd;padding-bottom:4px}"
    ".meta{color:#555;font-size:13px}.meta td{padding:1px 12px 1px 0;vertical-align:top}"
    "table.res{border-collapse:collapse;font-size:13px;margin-top:8px}"
    "table.res th,table.res td{border-bottom:1px solid #e5e5e5;padding:4px 10px;text-align:right}"
    "table.res th{background:#f4f6f8}table.res td:first-child,table.res th:first-child{text-align:"
    "left}"
    "td.raw,th.raw{color:#666;font-size:12px;text-align:left!important}"
    ".hb{color:#8a5a00}.note{background:#fff8e5;border-left:4px solid #e0a000;padding:8px 12px;"
    "font-size:13px}"
    "pre{background:#f7f7f7;padding:12px;overflow-x:auto;font-size:12px}"
    ".heading{font-family:monospace;font-size:12px;color:#444}"
    ".legend{font-size:13px;color:#444}.legend span{display:inline-block;width:12px;height:12px;"
    "margin:0 4px 0 12px;vertical-align:-1px}";

/* The page's head: title, styles, the run's description and the chart legend. */
static void html_head(const struct bench_report *r, FILE *f)
{
    const struct bench_suite *s = r->suite;
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>raidkit "
          "bench: ",
          f);
    render_xml(f, s->name);
    fprintf(f, "</title>\n<style>%s</style></head><body>\n<h1>raidkit bench: ", render_css);
    render_xml(f, s->name);
    fputs("</h1>\n<p>", f);
    render_xml(f, s->description);
    fputs("</p>\n<table class=\"meta\">\n<tr><td>Reproduces</td><td>", f);
    render_xml(f, s->reproduces);
    fputs("</td></tr>\n<tr><td>Target</td><td>", f);
    render_xml(f, r->target);
    fprintf(f, " (%d members)</td></tr>\n", r->members);
    if (r->model_name[0]) {
        fputs("<tr><td>Device model</td><td>", f);
        render_xml(f, r->model_name);
        fputs(" &#8212; RAID rows are predictions from a single-disk calibration", f);
        fputs("</td></tr>\n", f);
    }
    fputs("<tr><td>Versions</td><td>raidkit ", f);
    render_xml(f, r->raidkit_version);
    fputs(", fio ", f);
    render_xml(f, r->fio_version);
    fputs("</td></tr>\n<tr><td>Machine</td><td>", f);
    render_xml(f, r->machine.cpu_model);
    fprintf(f, ", %d cores, %.1f GiB, Linux ", r->machine.cores,
            r->machine.memory_bytes / (1024.0 * 1024.0 * 1024.0));
    render_xml(f, r->machine.kernel);
    fputs("</td></tr>\n<tr><td>Run</td><td>", f);
    render_xml(f, r->started);
    fputs(" &#8594; ", f);
    render_xml(f, r->finished);
    fprintf(f, "; at least %d trials per cell, more while RSD &gt; %.1f%%</td></tr>\n</table>\n",
            r->min_trials, BENCH_RSD_LIMIT);
    fputs("<p class=\"legend\"><span style=\"background:#2f6db5\"></span>raidkit "
          "<span style=\"background:#a8c7e8\"></span>raidkit, host-bound (*) "
          "<span style=\"background:#e08a2c\"></span>comparison (nbdkit, btrfs) "
          "<span style=\"background:#9aa0a6\"></span>noop ceiling &#8212; bars are means, "
          "whiskers &#177; one standard error</p>\n",
          f);
}

/* One line of a note block ("<b>WHAT [WHAT2]</b>: note"), opening the block under title first. */
static void html_note_item(FILE *f, bool *open, const char *title, const char *what,
                           const char *what2, const char *note)
{
    if (!*open)
        fprintf(f, "<p class=\"note\">%s:<br>\n", title);
    *open = true;
    fputs("<b>", f);
    render_xml(f, what);
    if (what2) {
        fputc(' ', f);
        render_xml(f, what2);
    }
    fputs("</b>: ", f);
    render_xml(f, note);
    fputs("<br>\n", f);
}

/* Notes on the whole run: interrupted, skipped configurations, failed measurements. */
static void html_notes(const struct bench_report *r, FILE *f)
{
    const struct bench_suite *s = r->suite;
    if (r->interrupted)
        fputs("<p class=\"note\">Interrupted: these are partial results.</p>\n", f);
    bool any_skip = false;
    for (int c = 0; c < r->nconfigs; c++) {
        if (!r->configs[c].skipped)
            continue;
        html_note_item(f, &any_skip, "Skipped configurations", r->configs[c].name, NULL,
                       r->configs[c].note);
    }
    if (any_skip)
        fputs("</p>\n", f);
    bool any_fail = false;
    for (int c = 0; c < r->nconfigs; c++) {
        for (int j = 0; j < s->njobs; j++) {
            const struct bench_cell *cell = &r->cells[c][j];
            if (r->configs[c].skipped || cell->ntrials > 0 || !cell->note[0])
                continue;
            html_note_item(f, &any_fail, "Failed measurements", r->configs[c].name, s->jobs[j].name,
                           cell->note);
        }
    }
    for (int c = 0; c < r->nconfigs; c++) /* checks after the trials (job_fs.c) */
        if (r->configs[c].failed)
            html_note_item(f, &any_fail, "Failed measurements", r->configs[c].name, NULL,
                           r->configs[c].note);
    if (any_fail)
        fputs("</p>\n", f);
}

/* A figure cell: prefix and v with prec decimals ("" when v <= 0). */
static void html_num(FILE *f, double v, const char *prefix, int prec)
{
    fputs("<td>", f);
    if (v > 0)
        fprintf(f, "%s%.*f", prefix, prec, v);
    fputs("</td>", f);
}

/* One result row: headline (the model's figure for a host-bound row), measured, predicted, seed
 * and ratio, statistics, latency, raw trials, the mapping to the study and the note. */
static void html_row(const struct bench_report *r, int c, int j, FILE *f)
{
    const struct bench_cell *cell = &r->cells[c][j];
    double seed = render_seed_mbs(r, c, j);
    fputs("<tr><td>", f);
    render_xml(f, r->configs[c].label);
    fprintf(f, "</td><td><b>%.2f</b>%s%s</td><td>%.2f%s%s</td>", render_headline(cell),
            render_model_headline(cell) ? " (model)" : "", render_noisy(cell) ? " ~" : "",
            cell->mean, cell->host_bound ? " *" : "", render_noisy(cell) ? " ~ noisy" : "");
    html_num(f, cell->model_mbs, "", 2);
    const char *study = render_seed_other_label(r, c, j);
    if (study) { /* a configuration standing for a study row of another label */
        fprintf(f, "<td>%.2f <small>(", seed);
        render_xml(f, study);
        fputs(")</small></td>", f);
    } else {
        html_num(f, seed, "", 2);
    }
    html_num(f, seed > 0 ? cell->mean / seed : 0, "&#215;", 2);
    const struct render_seed_reason *why = render_model_seed_reason(r, c, j);
    if (why)
        fprintf(f, "<td>&#215;%.2f %s</td>", cell->model_mbs / seed, why->code);
    else
        fputs("<td></td>", f);
    fprintf(f, "<td>%.2f</td><td>%.2f</td><td>%d</td>", cell->se, cell->rsd, cell->ntrials);
    html_num(f, cell->p50_us, "", 1);
    html_num(f, cell->p99_us, "", 1);
    fputs("<td class=\"raw\">", f);
    for (int t = 0; t < cell->ntrials; t++)
        fprintf(f, "%s%.1f", t ? ", " : "", cell->trials[t]);
    fputs("</td><td>", f);
    render_xml(f, render_mapping_short(r, c));
    fputs("</td><td class=\"hb\">", f);
    render_xml(f, cell->host_bound && !cell->note[0] ? render_hb_words(cell)
                                                     : render_cell_note(r, c, j));
    fputs("</td></tr>\n", f);
}

/* Under a job's table, once: the legend of the model / seed codes used, and the missing
 * prediction of a filesystem table. */
static void html_seed_legend(const struct bench_report *r, int j, FILE *f)
{
    const struct render_seed_reason *t = render_seed_reason_table();
    bool open = false;
    for (int k = 0; t[k].code; k++) {
        bool used = false;
        for (int c = 0; c < r->nconfigs; c++)
            used |= render_has_row(r, c, j) && render_model_seed_reason(r, c, j) == &t[k];
        if (!used)
            continue;
        if (!open)
            fputs("<p class=\"note\">Model &#247; seed, why:<br>\n", f);
        open = true;
        fprintf(f, "%s ", t[k].code);
        render_xml(f, t[k].words);
        fputs("<br>\n", f);
    }
    if (open)
        fputs("</p>\n", f);
    if (r->suite->jobs[j].tool[0]) {
        fputs("<p class=\"note\">", f);
        render_xml(f, RENDER_NO_FS_MODEL);
        fputs(".</p>\n", f);
    }
}

/* Under a job's table, once: why configurations differ from the study, and the noisy rows. */
static void html_job_notes(const struct bench_report *r, int j, FILE *f)
{
    char buf[300];
    bool open = false;
    for (int c = 0; c < r->nconfigs; c++) {
        if (!render_has_row(r, c, j) || !render_mapping(r, c, buf, sizeof(buf))[0])
            continue;
        if (!open)
            fputs("<p class=\"note\">Where a row differs from the study:<br>\n", f);
        open = true;
        render_xml(f, buf);
        fputs("<br>\n", f);
    }
    if (open)
        fputs("</p>\n", f);
    if (r->suite->jobs[j].note[0]) {
        fputs("<p class=\"note\">Note: ", f);
        render_xml(f, r->suite->jobs[j].note);
        fputs("</p>\n", f);
    }
    html_seed_legend(r, j, f);
    open = false;
    for (int c = 0; c < r->nconfigs; c++) {
        const struct bench_cell *cell = &r->cells[c][j];
        if (!render_has_row(r, c, j) || !render_noisy(cell))
            continue;
        if (!open)
            fprintf(f,
                    "<p class=\"note noisy\">~ noisy: the RSD stayed above %.1f%% after the "
                    "most trials allowed, the mean is uncertain:",
                    BENCH_RSD_LIMIT);
        open = true;
        fputc(' ', f);
        render_xml(f, r->configs[c].label);
        fprintf(f, " %.1f%% (%d trials);", cell->rsd, cell->ntrials);
    }
    if (open)
        fputs("</p>\n", f);
}

/* One job's section: heading, chart and result table. */
static void html_job(const struct bench_report *r, int j, FILE *f)
{
    const struct bench_suite *s = r->suite;
    char head[512];
    bench_job_heading(r, j, head, sizeof(head));
    fputs("<section class=\"job\">\n<h2>", f);
    render_xml(f, s->jobs[j].title);
    fputs(" <small>(", f);
    render_xml(f, s->jobs[j].name);
    fputs(")</small></h2>\n<div class=\"heading\">", f);
    render_xml(f, head);
    fputs("</div>\n<div class=\"chart\">\n", f);
    bench_render_svg(r, j, f);
    const char *unit = s->jobs[j].unit[0] ? s->jobs[j].unit : "MB/s"; /* filesystem jobs: theirs */
    fprintf(f,
            "</div>\n<table class=\"res\"><tr><th>Configuration</th><th>Headline %s</th>"
            "<th>Measured</th><th>Predicted (model)</th><th>Seed</th><th>&#215; seed</th>"
            "<th>Model &#247; seed</th>"
            "<th>&#177; SE</th><th>RSD %%</th><th>Trials</th><th>clat p50 &#181;s</th>"
            "<th>clat p99 &#181;s</th><th class=\"raw\">Raw trials (%s)</th><th>Study "
            "mapping</th><th>Note</th></tr>\n",
            unit, unit);
    for (int c = 0; c < r->nconfigs; c++)
        if (render_has_row(r, c, j))
            html_row(r, c, j, f);
    fputs("</table>\n", f);
    html_job_notes(r, j, f);
    if (!s->jobs[j].tool[0] || !strcmp(s->jobs[j].tool, "fio")) {
        char cmd[1024];
        bench_fio_cmdline(&s->jobs[j], !s->jobs[j].tool[0], cmd, sizeof(cmd));
        fputs("<div class=\"heading\">fio command: <code>", f);
        render_xml(f, cmd);
        fputs("</code></div>\n", f);
    }
    fputs("</section>\n", f);
}

int bench_render_html(const struct bench_report *r, FILE *f)
{
    html_head(r, f);
    html_notes(r, f);
    for (int j = 0; j < r->suite->njobs; j++)
        html_job(r, j, f);
    fputs("<h2>Text tables</h2>\n<pre>", f);
    /* The seed-style tables, escaped into the page (rendered to memory first). */
    char *buf = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&buf, &len);
    if (mf) {
        bench_render_text(r, mf);
        fclose(mf);
        render_xml(f, buf ? buf : "");
        free(buf);
    }
    fputs("</pre>\n</body></html>\n", f);
    return ferror(f) ? -EIO : 0;
}
