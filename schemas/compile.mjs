// Compile every schemas/**/*.ksy with kaitai-struct-compiler (npm, JS build) for the Python
// target.
//
//   node schemas/compile.mjs [OUT_DIR]
//
// OUT_DIR defaults to <repo>/generated. A schema at schemas/<subdir>/<id>.ksy becomes
// OUT_DIR/<subdir>/<id>.py, and imports between generated modules read
// `from generated.<subdir> import <id>` (the compiler's Python package option, set to
// `generated.<subdir>`). Every directory written gets a one-line __init__.py. Nothing else is
// touched, so the staleness test can compile into a temporary directory and compare bytes.
//
// The JS build's public `compile(lang, ksy, importer, debug)` has no parameter for the Python
// package: it builds its RuntimeConfig with pythonPackage "" (so imports would read
// `import per_block_affine`). The CLI's `--python-package` sets that same RuntimeConfig field.
// We therefore load the compiler's own source with that one constructor argument made
// configurable (checked to match exactly once; the load fails loudly otherwise), so that every
// byte of the output still comes from the compiler.

import { readFileSync, writeFileSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { createRequire, Module } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const YAML = require("yaml");

const SCHEMAS = dirname(fileURLToPath(import.meta.url));
const REPO = dirname(SCHEMAS);
const OUT = resolve(process.argv[2] ?? join(REPO, "generated"));
const PACKAGE_ROOT = "generated";
const EXPECTED_VERSION = "0.11";

// --- load the compiler with a configurable Python package -------------------------------
const compilerPath = require.resolve("kaitai-struct-compiler");
const CONFIG_HEAD = "var config = new $c_Lio_kaitai_struct_RuntimeConfig((!debug), debug,";
const CONFIG_TAIL = '"Kaitai", "", "", "kaitai_struct_nim_runtime", "")';
const source = readFileSync(compilerPath, "utf8");
const lines = source.split("\n");
const hits = lines.flatMap((line, i) =>
  line.includes(CONFIG_HEAD) && line.includes(CONFIG_TAIL) ? [i] : []
);
if (hits.length !== 1) {
  throw new Error(
    "kaitai-struct-compiler: expected the RuntimeConfig of compile() exactly once, found " +
      `${hits.length}; the pinned compiler version changed, update schemas/compile.mjs`
  );
}
lines[hits[0]] = lines[hits[0]].replace(
  CONFIG_TAIL,
  '"Kaitai", "", (globalThis.__hurrayPythonPackage ?? ""), "kaitai_struct_nim_runtime", "")'
);
const patched = lines.join("\n");
const loader = new Module(compilerPath);
loader.filename = compilerPath;
loader.paths = Module._nodeModulePaths(dirname(compilerPath));
loader._compile(patched, compilerPath);
const compiler = loader.exports;
if (!String(compiler.version).startsWith(EXPECTED_VERSION)) {
  throw new Error(`kaitai-struct-compiler ${compiler.version}; ${EXPECTED_VERSION}.x expected`);
}

// --- find and compile the schemas -------------------------------------------------------
function findKsy(dir) {
  const found = [];
  for (const name of readdirSync(dir).sort()) {
    if (name === "node_modules") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findKsy(path));
    else if (name.endsWith(".ksy")) found.push(path);
  }
  return found;
}

function loadKsy(path) {
  return YAML.parse(readFileSync(path, "utf8"));
}

function importerFor(ksyDir) {
  return {
    importYaml(name, mode) {
      // Relative imports are resolved against the importing schema's directory; all the
      // schemas of one directory import only each other.
      const base = mode === "abs" ? SCHEMAS : ksyDir;
      return Promise.resolve(loadKsy(join(base, `${name}.ksy`)));
    },
  };
}

async function compileOne(path) {
  const ksy = loadKsy(path);
  const subdir = dirname(relative(SCHEMAS, path));
  const id = ksy?.meta?.id;
  const fileId = path.slice(path.lastIndexOf(sep) + 1, -".ksy".length);
  if (id !== fileId) throw new Error(`${path}: meta/id ${id} differs from the file name`);
  const parts = [PACKAGE_ROOT, ...subdir.split(sep)].filter((p) => p && p !== ".");
  globalThis.__hurrayPythonPackage = parts.join(".");
  let files;
  try {
    files = await compiler.compile("python", ksy, importerFor(dirname(path)), false);
  } catch (err) {
    throw new Error(`${relative(REPO, path)}: ${err?.message ?? err}`);
  }
  const outDir = join(OUT, subdir);
  const written = [];
  for (const [name, text] of Object.entries(files)) {
    if (name !== `${id}.py`) continue; // imported schemas are written from their own .ksy
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, name), text);
    written.push(join(outDir, name));
  }
  if (written.length !== 1) throw new Error(`${path}: the compiler produced no ${id}.py`);
  return { outDir, written };
}

const schemas = findKsy(SCHEMAS);
if (schemas.length === 0) throw new Error(`no .ksy under ${SCHEMAS}`);
const dirs = new Set([OUT]);
for (const path of schemas) {
  const { outDir, written } = await compileOne(path);
  for (let d = outDir; d.startsWith(OUT); d = dirname(d)) dirs.add(d);
  for (const w of written) console.log(relative(process.cwd(), w));
}
for (const d of dirs) {
  const what =
    d === OUT
      ? "Generated code"
      : `Kaitai Struct readers compiled from schemas/${relative(OUT, d)}/*.ksy`;
  const text = `"""${what}; regenerate with schemas/regenerate, never edit by hand."""\n`;
  writeFileSync(join(d, "__init__.py"), text);
}
