#!/usr/bin/env node
// Draw images/icon.png (128x128): a rounded navy square holding a 4x4 grid of tiles, one 2x2
// block highlighted -- a tile program's view of a matrix. A small PNG encoder (zlib + CRC32);
// rerun after changing the drawing: `node scripts/make-icon.mjs`.
import { deflateSync } from "node:zlib";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const SIZE = 128;
const SS = 4; // supersampling per axis, for smooth edges

const BG = [24, 36, 64];
const TILE = [64, 156, 176];
const HOT = [255, 158, 64];

/** Signed distance to a rounded rectangle (negative inside). */
function roundedRect(x, y, x0, y0, x1, y1, r) {
  const cx = Math.max(x0 + r - x, 0, x - (x1 - r));
  const cy = Math.max(y0 + r - y, 0, y - (y1 - r));
  if (cx > 0 && cy > 0) return Math.hypot(cx, cy) - r;
  return Math.max(x0 - x, x - x1, y0 - y, y - y1);
}

function shade(x, y) {
  // returns [r, g, b, a] in 0..255 for one sample point
  if (roundedRect(x, y, 4, 4, 124, 124, 22) > 0) return [0, 0, 0, 0];
  const pad = 20;
  const gap = 6;
  const cell = (SIZE - 2 * pad - 3 * gap) / 4;
  for (let i = 0; i < 4; i++) {
    for (let j = 0; j < 4; j++) {
      const x0 = pad + j * (cell + gap);
      const y0 = pad + i * (cell + gap);
      if (roundedRect(x, y, x0, y0, x0 + cell, y0 + cell, 4) <= 0) {
        const hot = i >= 1 && i <= 2 && j >= 1 && j <= 2;
        const base = hot ? HOT : TILE;
        const k = hot ? 1 : 0.75 + 0.25 * ((i + j) / 6);
        return [base[0] * k, base[1] * k, base[2] * k, 255];
      }
    }
  }
  return [...BG, 255];
}

const rgba = Buffer.alloc(SIZE * SIZE * 4);
for (let y = 0; y < SIZE; y++) {
  for (let x = 0; x < SIZE; x++) {
    const acc = [0, 0, 0, 0];
    for (let sy = 0; sy < SS; sy++) {
      for (let sx = 0; sx < SS; sx++) {
        const c = shade(x + (sx + 0.5) / SS, y + (sy + 0.5) / SS);
        const a = c[3] / 255;
        acc[0] += c[0] * a;
        acc[1] += c[1] * a;
        acc[2] += c[2] * a;
        acc[3] += a;
      }
    }
    const n = SS * SS;
    const o = (y * SIZE + x) * 4;
    const alpha = acc[3] / n;
    rgba[o] = alpha ? Math.round(acc[0] / acc[3]) : 0;
    rgba[o + 1] = alpha ? Math.round(acc[1] / acc[3]) : 0;
    rgba[o + 2] = alpha ? Math.round(acc[2] / acc[3]) : 0;
    rgba[o + 3] = Math.round(alpha * 255);
  }
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}

const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(SIZE, 0);
ihdr.writeUInt32BE(SIZE, 4);
ihdr[8] = 8; // bit depth
ihdr[9] = 6; // RGBA
const raw = Buffer.alloc(SIZE * (SIZE * 4 + 1));
for (let y = 0; y < SIZE; y++) {
  raw[y * (SIZE * 4 + 1)] = 0; // filter: none
  rgba.copy(raw, y * (SIZE * 4 + 1) + 1, y * SIZE * 4, (y + 1) * SIZE * 4);
}
const png = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  chunk("IHDR", ihdr),
  chunk("IDAT", deflateSync(raw, { level: 9 })),
  chunk("IEND", Buffer.alloc(0)),
]);

const out = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "images", "icon.png");
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, png);
console.log(`wrote ${out} (${png.length} bytes)`);
