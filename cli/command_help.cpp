#include "cli/command_help.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

#include "common/arguments.h"

namespace rgbaq::cli {

const char* const kUsage = R"(usage: rgbaq [--socket PATH] COMMAND [options]      (rgbaq COMMAND --help: that command's help)

  submit FILE|- | --prompt TEXT [--seeds S] [--size SIZE] [--out DIR] [--wait] ...
                          queue a file of prompts (CSV with a header, or JSONL) or one prompt;
                          prints the run id
  watch [RUN] [--no-reconnect]
                          each job in hand and a bar per run in progress, with ETA; waits for a
                          stopped daemon to return unless --no-reconnect
  status                  the daemon, its queue and its counters
  http-url [--no-token]   the daemon's HTTP API address, with the token (open it in a browser)
  gallery [--print]       open the review gallery in the default browser (--print: only print its address)
  ls runs | ls jobs [--run R] [--state S] [--marked M] [--qa FLAG] [--limit N] [--all]
  cancel RUN | cancel --job JOB
  retry RUN [--failed] [--canceled]
                          failed (and with --canceled, canceled) jobs back to the queue
  rm RUN [--delete-images]
                          forget a finished run (its names become free); --delete-images: its PNGs too
  mark JOB... --star|--reject|--clear
                          star or reject jobs' images (JOB: 7 or 3-9), or clear their marks
  pause | resume          stop or restart taking new jobs
  prioritize RUN N        higher goes first
  export RUN [--format csv|jsonl] [--marked M] [-o FILE]
                          the run's jobs, outputs and metadata
  export RUN --assets DIR [--trim] [--pad PX] [--sizes 64,128] [--atlas NAME] ...
                          the run's images as finished assets: trimmed, padded, resized, packed
  sheet RUN [-o FILE] [--thumb PX] [--x AXIS] [--y AXIS] [--per-page ROWS [--page N]] [--font FILE.ttf] [--marked M]
                          a labelled contact sheet PNG: seeds across, prompts down (AXIS: prompt,
                          seed, size, lora, lora:NAME or a template variable: 1, style, ...; default
                          font DejaVu Sans from fonts-dejavu-core),
                          written to OUT/.rgbaq/sheets/, where no game engine's importer looks
  qa FILE.png... [--json]
                          the alpha check of any PNG (figures and flags), here, with no daemon
  service install|uninstall|status [--model DIR|REPO] [--print]
                          rgbaqd as a launchd agent (macOS) or systemd --user service (Linux)
  host noise|rope|sigmas|tokenize
                          the host contract's values, computed locally (see rgbaq host --help)
  model pull [REPO[@REV]] [--to DIR] | model check DIR|REPO [--json]
  model quantize SRC DST [--components transformer,text_encoder]
                          fetch a model from the Hugging Face Hub; inspect a model directory;
                          write int8 weights (see rgbaq model --help)
  --version               the version, the git commit and the engines built in

Read commands take --json. The socket is --socket, $RGBAQ_SOCKET, or the platform default.
Exit codes: 0 ok, 1 failure, 2 usage or bad input, 3 the daemon is not reachable.
)";

namespace {

const std::map<std::string, const char*>& helps() {
  static const std::map<std::string, const char*> all = {
      {"submit", R"(usage: rgbaq submit FILE|- [options]
       rgbaq submit --prompt TEXT [options]

Queues a file of job rows (CSV with a header row, or JSONL; `-` reads standard input), or one prompt,
as one run, and prints the run id. The whole file is checked first: a file with any error queues
nothing, and every error names its file, line, column and field.

Rows: prompt (required), seed (7, 1-16, 1,5,9 or 1-4,9), count, size, name, priority, lora
(NAME:W;NAME:W, or <lora:NAME:W> in the prompt), reseed_on (cut_off,empty; "" for none), reseed_max.
The options fill in what a row leaves out; a row's own value wins, and rgbaq prints a note naming the
rows where it did.

Templates: a prompt's {red|blue|gold} is one of its alternatives (nested; {|huge } has an empty one;
\{ \| \} \\ \_ are the characters themselves) and __style__ one line of style.txt in the wildcards
folder (blank lines and # comments skipped; wildcards in it too, 8 deep). Each combination is a row of
its own, the leftmost choice varying slowest, and each job records its template and its choices
({...} groups by number from 1, wildcards by name). A row with a name and several combinations names
combination K's files NAME-K_SEED.png.

  --prompt TEXT       one prompt instead of a file (its seeds from --seeds)
  --seeds S           seeds for rows without a seed: 7, 1-16, 1,5,9 or 1-4,9
                      (default: one random seed per row, recorded in the queue and in the PNG)
  --count N           images per row that gives one starting seed: seeds S, S+1, ... (default 1)
  --size SIZE         256, 512, 1024 or WxH, multiples of 16 (default 1024: the model's native size;
                      the tiny test model of scripts/run renders any size, its job file says 256)
  --priority N        higher goes first, -1000000..1000000 (default 0)
  --out DIR           where the PNGs go (default ./renders); OUT/<name or prompt-slug-hash>_<seed>.png
  --name RUN          the run's name (default: the file name without its extension; the prompt's
                      first 40 bytes for --prompt, "stdin" for -); with --prompt it names the
                      files too, as a row's name does (OUT/NAME_SEED.png: ASCII letters, digits,
                      _, - and ., kept as written)
  --format csv|jsonl  the file's format (default: by extension; .jsonl and .ndjson are JSONL, else CSV)
  --skip-duplicates   leave out jobs already queued, running or done (same prompt, seed, size, name
                      and --out); when that leaves nothing, no run is made
  --replace           take over the output names of finished or forgotten runs: an image of another
                      prompt already at a path is moved to OUT/replaced/ (as NAME-2.png... if taken),
                      never deleted; a name whose run is still queued or running is still refused
  --reseed-on FLAG[,FLAG...]
                      re-seed the rows whose images get one of these alpha-check flags (empty,
                      no_alpha, cut_off, fragmented, fake_transparency; see rgbaq qa --help): such a
                      job is kept, and its row gets a new job with the next seed it has not used,
                      queued with the first one's completion (a row may say its own: reseed_on, reseed_max)
  --reseed-max N      at most N re-seeded jobs a row, 0..1000 (default 2); rgbaq ls jobs shows which
                      job replaces which
  --dry-run           check the file and count its jobs (with templates: and show the first 20 jobs
                      as they would be queued); queue nothing
  --wildcards DIR     where __name__ finds name.txt (default $XDG_CONFIG_HOME/rgbaq/wildcards, or
                      ~/.config/rgbaq/wildcards); read here and sent with the submit
  --sample N          N combinations of each template, drawn at random (distinct), not all of them
  --sample-seed S     the draw's seed: the same S, file and wildcards draw the same (default: drawn,
                      and printed)
  --wait              follow the run until it finishes (Ctrl-C stops following; the run goes on)
  --max-jobs N        refuse a submit of more than N jobs (default 100000; at most the daemon's
                      --max-jobs-per-submit)
  --lora NAME:W[;NAME:W]
                      LoRAs for the rows that name none (default: none); NAME is NAME.safetensors in
                      a folder given to rgbaqd --lora-dir; DiT LoRAs only
  --json              print the daemon's reply as JSON

An output path belongs to one image: a submit that would give it to another (two rows of the file, an
earlier run, or a PNG already there holding another image) is refused, naming the row and the path,
unless --replace. A path whose file is gone and whose run is finished (or forgotten: rgbaq rm) is free
again, without --replace.
Images already there (from an earlier run of the same file) are reused, not rendered again.
Exit: 0 queued (with --wait: every job done), 1 a job failed or was canceled, 2 bad input, 3 no daemon.
)"},
      {"watch", R"(usage: rgbaq watch [RUN] [--until-done] [--no-reconnect]

Follows the daemon's progress. On a terminal: each job in hand (run, name or prompt, seed, size, step
or decoding) and a bar per run in progress with its ETA (from measured step times per size), redrawn
in place and for the terminal's width; otherwise one line per event.

  RUN             follow this run and stop when it has finished (default: every run, until Ctrl-C)
  --until-done    without RUN: stop when nothing is queued or running
  --no-reconnect  exit (status 1) when the daemon goes away (default: say so and wait for it to return)
)"},
      {"status", R"(usage: rgbaq status [--json]

The daemon (version, pid, uptime, model, engine), its queue's counts, the job in hand, the counters
since it started, and the embedding cache's folder (its size, budget and entries; the budget is
rgbaqd's --encoder-cache-disk-mb). Exit 1 when the daemon reports its queue database unhealthy.
)"},
      {"ls", R"(usage: rgbaq ls runs [--json]
       rgbaq ls jobs [--run R] [--state S] [--marked M] [--qa FLAG] [--limit N] [--offset N] [--all] [--json]

runs: every run with its counts (total, done, failed, canceled, queued, running), when it was submitted
and when its last job ended (local time; - while it has jobs to go) and its output directory; --json
has created_at and, for a finished run, finished_at (seconds since 1970).
jobs: jobs in submit order, with state, mark (star, reject or -), seed, size, prompt and output (the
PNG of a done job, where a queued or running one will write it; the failure reason of a failed one; a
canceled job has none), then its alpha check's flags ([ok], [cut_off,fragmented]) and which job it
re-seeds or is re-seeded by; --json adds mark, marked_at and marked_by (null when unmarked), qa (the
alpha check's figures and flags, as rgbaq qa --json gives them; null until done), reseed_on,
reseed_max, replaces and replaced_by (the jobs it re-seeds and is re-seeded by; null for none).

  --run R       only this run's jobs (default: every run)
  --state S     queued, running, done, failed, canceled (or cancelled) (default: every state)
  --marked M    star, reject, none (unmarked) or any (starred or rejected) (default: every job)
  --qa FLAG     jobs whose alpha check has FLAG (empty, no_alpha, cut_off, fragmented,
                fake_transparency), or ok: no flag (default: every job)
  --limit N     at most N jobs (default 50; says how to see the rest)
  --offset N    skip the first N (default 0)
  --all         every job, however many
)"},
      {"cancel", R"(usage: rgbaq cancel RUN | rgbaq cancel --job JOB [--json]

Cancels a run's queued jobs, or one job. A running job is asked to stop at its next step and counted
apart: one already decoding ends done. A job that has already finished (done or failed) cannot be
canceled: rgbaq says so and exits 1.
)"},
      {"rm", R"(usage: rgbaq rm RUN [--delete-images] [--json]

Forgets a run: its jobs leave the queue and the listings, and its output names become free for other
prompts. A run with jobs queued or running is refused (exit 1): cancel it first (rgbaq cancel RUN).
Its PNGs stay where they are, unless --delete-images: then each done job's PNG is deleted if it still
holds that job's image (its rgbaq metadata names the job); a file moved, replaced or shared with
another run's job (a resubmit that reused it) is kept.
)"},
      {"retry", R"(usage: rgbaq retry RUN [--failed] [--canceled] [--json]

Puts the run's failed jobs back in the queue with their attempts reset.

  --failed    the failed jobs (the default; say it to be plain)
  --canceled  the canceled jobs too (default: failed ones only)

A run with nothing to retry says so, and which option would take its canceled jobs.
A job whose output name another submit has taken since (--replace, or its file gone) stays as it is.
)"},
      {"mark", R"(usage: rgbaq mark JOB... --star|--reject|--clear [--json]

Stars or rejects jobs (their images), or clears their marks: the same marks as the gallery's, kept in
the queue with who set them (your uid) and when, and kept when a job is retried or rendered again.
JOB is a job id (rgbaq ls jobs) or a range such as 3-9; at most 100000 jobs at once. A job that is
not in the queue is named, and then no job is marked (exit 1).

  --star     star the jobs
  --reject   reject the jobs
  --clear    take their marks away
  --json     print the daemon's reply ({"marked": jobs whose mark changed})

See them with rgbaq ls jobs --marked star, rgbaq export RUN --marked star, rgbaq sheet RUN --marked star.
)"},
      {"pause", R"(usage: rgbaq pause [--json]

The job in hand finishes; no new one starts until `rgbaq resume`. Submits are still taken.
)"},
      {"resume", R"(usage: rgbaq resume [--json]

Starts taking jobs again after `rgbaq pause`.
)"},
      {"prioritize", R"(usage: rgbaq prioritize RUN PRIORITY [--json]

Sets the priority of the run's queued and running jobs (-1000000..1000000; higher goes first; a
submit's default is 0).
)"},
      {"export", R"(usage: rgbaq export RUN [--format csv|jsonl] [--marked M] [--qa FLAG] [-o FILE]

The run's jobs with their outputs and metadata (JSONL: everything, one job a line, its mark, marked_at
and marked_by included; CSV: job, run, state, prompt, seed, width, height, name, lora, output, error,
attempts, seconds, mark, template, choices: a template's job has the prompt as written and its choices
as a JSON object; qa: the alpha check's flags, ok or cut_off,fragmented, empty until done; replaces: the
job it re-seeds). JSONL has each job's qa object (rgbaq qa --json's figures and flags).

  --format F  jsonl or csv (default jsonl)
  --marked M  only the jobs marked star, reject, none (unmarked) or any (starred or rejected)
              (default: every job)
  --qa FLAG   only the jobs whose alpha check has FLAG, or ok: no flag (default: every job)
  -o FILE     write to FILE (default: standard output)

usage: rgbaq export RUN --assets DIR [--trim] [--pad PX] [--premultiplied] [--format png|webp]
                    [--sizes 64,128,...] [--atlas NAME [--atlas-max PX]] [--marked M] [--qa FLAG]
                    [--state S] [--json]

The run's images as assets a game or UI pipeline takes as they are, written into DIR (made if need be;
nothing is written outside it): for each image NAME.png (NAME: its output's name), and NAME_64px.png
... for each size; DIR/manifest.json lists every image (job, prompt, seed, source size, trim rectangle,
padding) and every file written. Running the same export again replaces its own files (those the
manifest lists, as they were written) and removes those it no longer writes; any other file in the way
stops it before it writes anything.

  --trim            cut each image to its content: the pixels with alpha above 8 (the alpha check's bbox)
  --pad PX          PX transparent pixels around each image, in every size and in the atlas (0-1024)
  --premultiplied   colour premultiplied by alpha (round(c * a / 255)); default straight alpha
  --format F        png or webp (lossless, alpha kept) (default png)
  --sizes S,S,...   also each size S: the longer side S pixels (padding included), aspect kept,
                    resampled in premultiplied space (stb_image_resize: Mitchell shrinking, Catmull-Rom
                    growing), so no dark or coloured fringe where alpha falls to zero
  --atlas NAME      pack the images (trimmed and padded) into NAME.png and NAME.json, TexturePacker's
                    JSON Hash as PixiJS, Phaser and Godot read it; with more than one page NAME-0.png,
                    NAME-1.png ... and NAME.json, NAME-1.json ..., each JSON one page, listing the others
                    in meta.related_multi_packs (PixiJS loads them all from NAME.json)
  --atlas-max PX    the largest side of an atlas page (default 4096)
  --marked M        only the jobs marked star, reject, none or any
  --qa FLAG         only the jobs whose alpha check has FLAG (empty, no_alpha, cut_off, fragmented,
                    fake_transparency), or ok: none
  --state S         only the jobs in state S (default done: the others have no image)
)"},
      {"sheet", R"(usage: rgbaq sheet RUN [-o FILE] [--thumb PX] [--x AXIS] [--y AXIS] [--columns N]
                  [--per-page ROWS [--page N]] [--font FILE.ttf] [--marked M] [--qa FLAG]

A labelled contact sheet PNG of the run: the run, its sizes and its LoRAs in a header, seeds across
and prompts down (by default), each cell's image or why it has none (failed, missing, canceled, not
rendered yet). An attribute on neither axis that varies (say, two sizes) joins each row's label.

  -o FILE       where to write it (default: OUT/.rgbaq/sheets/sheet_runRUN.png, OUT the run's output
                directory: beside its images, but in a hidden folder, which the importers of game
                engines (Unity, Godot) skip, so a sheet never becomes an asset; --marked star:
                sheet_runRUN_starred.png; a page of several: sheet_runRUN_pN.png)
  --thumb PX    the cell size, 16..1024 (default 128)
  --columns N   wrap a row of more than N cells into rows under it, each with its own column
                labels (default 16; 0: never wrap)
  --per-page ROWS, --page N
                a page of the sheet: ROWS rows of it, page N (default 1). A sheet is at most 64 Mi
                pixels and 65,535 px a side; a bigger one is refused, saying how many rows a page holds
  --x AXIS      the columns' axis (default seed)
  --y AXIS      the rows' axis (default prompt)
                AXIS: prompt, seed, size, or for a run whose jobs have LoRAs:
                lora       each job's LoRA set ("detail 0.5", "no LoRA"; several joined by " + ")
                lora:NAME  the weight of LoRA NAME ("detail 0.5", "no detail"); the rest of each
                           job's set splits the rows. Two LoRAs' weights: --x lora:A --y lora:B
                or for a run of templates, a template variable as the jobs' choices name it: a
                {...} group's number (1, 2, ...), a wildcard's name (style, style.1); var:NAME for
                one named like an axis above. Its values label the axis, in the order they first
                appear: (empty) for an empty alternative, (none) for a job without that choice;
                the template and the other choices split the rows where they vary:
                rgbaq sheet 7 --x 1 --y style
  --font FILE   a TrueType font (default /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf); characters
                it lacks (CJK, emoji) come from the fonts fontconfig finds for them
  --marked M    only the jobs marked star, reject, none or any (default: every job of the run): a
                sheet of its own (_starred, _rejected, _unmarked, _marked), its header says which
                jobs it holds, and a place no such job fills stays empty
  --qa FLAG     only the jobs whose alpha check has FLAG (empty, no_alpha, cut_off, fragmented,
                fake_transparency), or ok (none): a sheet of its own (_qa-FLAG), as --marked's
)"},
      {"qa", R"(usage: rgbaq qa FILE.png... [--json]

The alpha check of each PNG, computed here (no daemon): the same figures and flags rgbaqd records for
every image it renders (rgbaq ls jobs --json shows them as each job's qa). With a the 8-bit alpha:
transparent a <= 8, opaque a >= 247, partial between.

  transparent, opaque, partial  the fractions of the pixels
  bbox         x,y WxH of the smallest rectangle holding every pixel with a > 8 (none: no such pixel)
  components   8-connected regions of pixels with a >= 128 holding at least 0.05% of the pixels and 4
  edge         the fraction of the border pixels (outermost rows and columns) with a >= 128
  checker      the share of the image covered by the cells of a grey checker found in the RGB

Flags: empty (transparent >= 0.995), no_alpha (opaque >= 0.995), cut_off (edge >= 0.02), fragmented
(components > 8), fake_transparency (a two-tone grey checker, as editors draw transparency, painted
into the RGB over at least 20% of the image, whatever the alpha); ok when none.
A PNG without alpha (grey, RGB, a palette without tRNS) is checked as libpng expands it to RGBA, every
pixel opaque; the line says how it was stored. 16-bit PNGs are checked on each value's high byte.

  --json   {"images": [{"file", "width", "height", "stored_as", "qa": {"transparent", "opaque",
           "partial", "bbox" ([x, y, w, h] or null), "components", "edge", "checker", "flags"}}]};
           a file that could not be read: {"file", "error"}

Exit: 0 every file read (whatever its flags), 1 a file could not be read (the others are still
checked), 2 usage.
)"},
      {"service", R"(usage: rgbaq service install --model DIR [--data-dir DIR] [--rgbaqd PATH] [--print]
       rgbaq service uninstall [--print] | rgbaq service status

install writes rgbaqd's service files and starts it on demand: on Linux a systemd --user socket and
service (~/.config/systemd/user/rgbaqd.socket and .service), on macOS a launchd agent
(~/Library/LaunchAgents/com.rgbaq.rgbaqd.plist). The renderer runs at batch priority (Linux: Nice=10,
CPUSchedulingPolicy=batch, IOSchedulingClass=best-effort with IOSchedulingPriority=7, the lowest of
that class: idle could starve the queue's fsyncs; macOS: ProcessType Standard, see the plist).
status asks systemctl --user (launchctl on macOS); without a user session bus it says so and how
to check rgbaqd another way.

  --model DIR     the model directory rgbaqd serves (required); a Hugging Face repo id ORG/NAME[@REV]
                  stands for its snapshot in the cache (the folder is written into the service)
  --data-dir DIR  the queue and caches (default: the platform's data directory)
  --rgbaqd PATH   the daemon (default: the rgbaqd beside this rgbaq, else the one on PATH)
  --print         print exactly the files install would write, and write nothing
)"},
      {"gallery", R"(usage: rgbaq gallery [--print]

Opens the review gallery (every run's images: stars, rejects, compare) in the default browser
(xdg-open; open on macOS), through a private file in the daemon's data directory that forwards to
the gallery's address with its token: the token never appears on a command line. Prints the address.
Exit 1 when the daemon serves no HTTP (rgbaqd --http off) or no browser can be opened.

  --print   only print the address (with the token), open nothing
)"},
      {"http-url", R"(usage: rgbaq http-url [--no-token]

Prints the address of the daemon's HTTP API and gallery, with the token every request needs
(http://127.0.0.1:7878/?token=...; the token is read from the daemon's data directory, DATA_DIR/http-token).
Send the token as "Authorization: Bearer TOKEN" from scripts. Exit 1 when the daemon serves no HTTP.

  --no-token  the address alone
)"},
  };
  return all;
}

}  // namespace

std::string nearest_command(const std::string& name) {
  return common::nearest_name(name, std::vector<std::string>(std::begin(kCommands), std::end(kCommands)));
}

const char* command_help(const std::string& command) {
  const auto it = helps().find(command);
  return it == helps().end() ? nullptr : it->second;
}

}  // namespace rgbaq::cli
