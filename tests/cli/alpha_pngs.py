#!/usr/bin/env python3
"""PNGs for `rgbaq qa`, written with zlib and struct only (no image library: an independent writer), and
the alpha check's figures and flags each must get, worked out from how each image is drawn.

usage: alpha_pngs.py OUT_DIR   (writes OUT_DIR/*.png and OUT_DIR/expected.json: {file: qa})

Each expected qa has the figures of assets/alpha_check.h: transparent, opaque, partial (fractions of the
pixels), bbox ([x, y, w, h] of the pixels with alpha > 8, or None), components (8-connected regions of
alpha >= 128 with at least 0.05% of the pixels and 4), edge (the share of border pixels with alpha >=
128), checker (the share of the image in checker cells, where the image's construction says so) and
flags. The fractions are count / total in float64, as the check computes them, so they compare exactly.
"""
import json
import os
import random
import struct
import sys
import zlib


def png_bytes(width, height, rows, color_type=6):
    """rows: a list of bytes objects, each a row of RGBA (color type 6) or RGB (color type 2) samples."""
    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + row for row in rows)  # filter type 0 on every row
    header = struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")


class Image:
    def __init__(self, width, height, fill=(0, 0, 0, 0)):
        self.width, self.height = width, height
        self.px = [[fill] * width for _ in range(height)]

    def write(self, path):
        rows = [bytes(v for p in row for v in p) for row in self.px]
        with open(path, "wb") as f:
            f.write(png_bytes(self.width, self.height, rows))


def fraction(part, whole):
    return part / whole


def border_count(w, h):
    return w * h if w == 1 or h == 1 else 2 * w + 2 * h - 4


def disc_pixels(cx, cy, r, w, h):
    """The pixels whose centres lie within r of (cx, cy)."""
    return {(x, y) for y in range(h) for x in range(w) if (x + 0.5 - cx) ** 2 + (y + 0.5 - cy) ** 2 <= r * r}


def bbox_of(pixels):
    xs = [x for x, _ in pixels]
    ys = [y for _, y in pixels]
    return [min(xs), min(ys), max(xs) - min(xs) + 1, max(ys) - min(ys) + 1]


def checker_tone(x, y, cell, light, dark, ox=0, oy=0):
    return light if ((x - ox) // cell + (y - oy) // cell) % 2 == 0 else dark


def counted_cells(w, h, cell, covered, ox=0, oy=0):
    """The checker cells the rule of assets/alpha_check.cpp (checker_cells) counts, from its geometric
    statement: a cell whose upper-left corner is inside the image (a cell to its left and above), with a
    cell to its right and below (its sides end on the other tone), none of its pixels, of the pixels
    beside its top and left sides, of the corner pixel above-left, or of the two pixels that end its sides
    covered by the object; cells wholly inside the image. Returns (cells, pixels)."""
    cells = pixels = 0
    for y0 in range(oy % cell - cell, h, cell):
        for x0 in range(ox % cell - cell, w, cell):
            if x0 < 1 or y0 < 1 or x0 + cell >= w or y0 + cell >= h:
                continue
            looked = {(x0 + i, y0 + j) for i in range(cell) for j in range(cell)}
            looked |= {(x0 + i, y0 - 1) for i in range(cell)} | {(x0 - 1, y0 + j) for j in range(cell)}
            looked |= {(x0 - 1, y0 - 1), (x0 + cell, y0), (x0, y0 + cell)}
            if looked & covered:
                continue
            cells += 1
            pixels += cell * cell
    return cells, pixels


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    expected = {}

    # A centred disc: radius 20 in 64x64, opaque on clear. Its pixels: centres within 20 of (32, 32).
    w = h = 64
    disc = disc_pixels(32, 32, 20, w, h)
    im = Image(w, h)
    for x, y in disc:
        im.px[y][x] = (200, 40, 40, 255)
    im.write(os.path.join(out, "disc.png"))
    n = w * h
    expected["disc.png"] = {"transparent": fraction(n - len(disc), n), "opaque": fraction(len(disc), n), "partial": 0.0,
                            "bbox": [12, 12, 40, 40], "components": 1, "edge": 0.0, "checker": 0.0, "flags": []}

    # A square touching the frame: 40x40 at x 0..39, y 30..69 of 100x100. The border's 396 pixels hold 40
    # of it (the left column from y 30 to 69): edge 40/396, over 0.02: cut_off.
    w = h = 100
    im = Image(w, h)
    for y in range(30, 70):
        for x in range(0, 40):
            im.px[y][x] = (40, 200, 40, 255)
    im.write(os.path.join(out, "square_at_frame.png"))
    expected["square_at_frame.png"] = {"transparent": fraction(10000 - 1600, 10000), "opaque": fraction(1600, 10000),
                                       "partial": 0.0, "bbox": [0, 30, 40, 40], "components": 1,
                                       "edge": fraction(40, 396), "checker": 0.0, "flags": ["cut_off"]}

    # 20 specks: 5x5 squares (25 px, over 0.05% of 40,000 = 20 px) on a 5 by 4 grid, 40 px apart, from
    # (10, 12) in 200x200; 2x2 dust (4 px: under 20 px, not a component) at (190, 190) widens the bbox.
    w = h = 200
    im = Image(w, h)
    for row in range(4):
        for col in range(5):
            for y in range(12 + 40 * row, 17 + 40 * row):
                for x in range(10 + 40 * col, 15 + 40 * col):
                    im.px[y][x] = (250, 250, 250, 255)
    for y in (190, 191):
        for x in (190, 191):
            im.px[y][x] = (250, 250, 250, 200)  # partial: 200 is neither <= 8 nor >= 247
    im.write(os.path.join(out, "specks.png"))
    expected["specks.png"] = {"transparent": fraction(40000 - 500 - 4, 40000), "opaque": fraction(500, 40000),
                              "partial": fraction(4, 40000), "bbox": [10, 12, 182, 180], "components": 20, "edge": 0.0,
                              "checker": 0.0, "flags": ["fragmented"]}

    # All clear.
    im = Image(64, 64)
    im.write(os.path.join(out, "clear.png"))
    expected["clear.png"] = {"transparent": 1.0, "opaque": 0.0, "partial": 0.0, "bbox": None, "components": 0, "edge": 0.0,
                             "checker": 0.0, "flags": ["empty"]}

    # Opaque noise, photo-like in that every pixel differs from its neighbours: no flat cell anywhere.
    rng = random.Random(40)
    w = h = 128
    im = Image(w, h)
    im.px = [[(rng.randrange(256), rng.randrange(256), rng.randrange(256), 255) for _ in range(w)] for _ in range(h)]
    im.write(os.path.join(out, "noise.png"))
    expected["noise.png"] = {"transparent": 0.0, "opaque": 1.0, "partial": 0.0, "bbox": [0, 0, w, h], "components": 1,
                             "edge": 1.0, "checker": 0.0, "flags": ["no_alpha", "cut_off"]}

    # Checkerboards behind an object (an opaque orange disc, radius 60, centred in 256x256): cells of 8, 16
    # and 32 px in #ffffff/#cccccc and #999999/#666666, painted opaque (the model drew the checker as
    # pixels) or under alpha 0 (its RGB holds the checker where the image is clear): fake_transparency
    # whatever the alpha. One more at an offset grid (16 px cells from (5, 11)).
    w = h = 256
    n = w * h
    obj = disc_pixels(128, 128, 60, w, h)
    for cell, light, dark, ox, oy in [(8, 0xFF, 0xCC, 0, 0), (16, 0xFF, 0xCC, 0, 0), (32, 0xFF, 0xCC, 0, 0),
                                      (8, 0x99, 0x66, 0, 0), (16, 0x99, 0x66, 0, 0), (32, 0x99, 0x66, 0, 0),
                                      (16, 0xFF, 0xCC, 5, 11)]:
        cells, pixels = counted_cells(w, h, cell, obj, ox, oy)
        for background_alpha in (255, 0):
            im = Image(w, h)
            for y in range(h):
                for x in range(w):
                    if (x, y) in obj:
                        im.px[y][x] = (230, 120, 30, 255)
                    else:
                        t = checker_tone(x, y, cell, light, dark, ox, oy)
                        im.px[y][x] = (t, t, t, background_alpha)
            assert cells >= 4 and pixels * 5 >= n, (cell, cells, pixels)  # the rule's bar, met by construction
            name = f"checker_{cell}px_{light:02x}{dark:02x}{'_opaque' if background_alpha else '_clear'}" + \
                   (f"_at_{ox}_{oy}" if ox or oy else "") + ".png"
            im.write(os.path.join(out, name))
            opaque = n if background_alpha else len(obj)
            expected[name] = {"transparent": fraction(n - opaque, n), "opaque": fraction(opaque, n), "partial": 0.0,
                              "bbox": [0, 0, w, h] if background_alpha else bbox_of(obj), "components": 1,
                              "edge": 1.0 if background_alpha else 0.0, "checker": fraction(pixels, n),
                              "flags": (["no_alpha", "cut_off"] if background_alpha else []) + ["fake_transparency"],
                              "checker_cells": cells}

    # Not checkers: a flat grey, grey stripes of 16 px (upright, lying, and diagonal) in the checker's
    # own tones, and a black-and-white board (a chess board, not transparency: its dark tone is under 64).
    def grey(name, tone_of):
        im = Image(128, 128)
        for y in range(128):
            for x in range(128):
                t = tone_of(x, y)
                im.px[y][x] = (t, t, t, 255)
        im.write(os.path.join(out, name))
        expected[name] = {"transparent": 0.0, "opaque": 1.0, "partial": 0.0, "bbox": [0, 0, 128, 128], "components": 1,
                          "edge": 1.0, "checker": 0.0, "flags": ["no_alpha", "cut_off"]}
    grey("flat_grey.png", lambda x, y: 0x80)
    grey("stripes_upright.png", lambda x, y: 0xFF if (x // 16) % 2 == 0 else 0xCC)
    grey("stripes_lying.png", lambda x, y: 0xFF if (y // 16) % 2 == 0 else 0xCC)
    grey("stripes_diagonal.png", lambda x, y: 0xFF if ((x + y) // 16) % 2 == 0 else 0xCC)
    grey("chess_board.png", lambda x, y: 0xFF if (x // 16 + y // 16) % 2 == 0 else 0x00)

    # An RGB PNG (no alpha channel): read as opaque.
    rows = [b"".join(bytes([(x * 2) & 255, 100, 50]) for x in range(64)) for _ in range(32)]
    with open(os.path.join(out, "rgb.png"), "wb") as f:
        f.write(png_bytes(64, 32, rows, color_type=2))
    expected["rgb.png"] = {"transparent": 0.0, "opaque": 1.0, "partial": 0.0, "bbox": [0, 0, 64, 32], "components": 1,
                           "edge": 1.0, "checker": 0.0, "flags": ["no_alpha", "cut_off"]}

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main()
