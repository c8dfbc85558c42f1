"""Hostile files given to `mcptap import`: a bundle whose `frames.jsonl` inflates a thousand
times (refused as it grows, before it fills the disk: the process runs under a file-size limit),
a bundle nested in a bundle 400 deep. Real `mcptap import` processes: one line naming the
user's file, exit 2."""

from __future__ import annotations

import json
import os
import resource
import zipfile
from pathlib import Path

from tests.conftest import mcptap, run

MANIFEST = json.dumps({"format": "mcptap-bundle", "version": 1})
FILE_LIMIT = 100 << 20  # the largest file the import may write (RLIMIT_FSIZE)


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def one_line_refusal(done, path: Path) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, (done.returncode, err[-2000:])
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err[-2000:]
    assert str(path) in err and "mcptap-bundle-" not in err, err
    return err


def test_a_bundle_that_inflates_a_thousand_times_is_refused_before_it_is_unpacked(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("bundle.json", MANIFEST)
        with z.open("frames.jsonl", "w", force_zip64=True) as member:
            block = b" " * (1 << 20)
            for _ in range(300):  # 300 MiB of spaces, about 300 KB packed
                member.write(block)
    assert bomb.stat().st_size < 1 << 20
    done = run(mcptap("import", "--db", str(tmp_path / "db.db"), str(bomb)), timeout=120, preexec_fn=limited,
               env={**os.environ, "TMPDIR": str(tmp_path)})
    one_line_refusal(done, bomb)


def test_a_bundle_nested_in_a_bundle_400_deep_is_refused_in_one_line(tmp_path):
    inner = b'{"record":"frame","session":"s","dir":"c2s","ts":1,"text":"{}"}\n'
    for depth in range(400):
        path = tmp_path / f"level{depth}.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
            z.writestr("bundle.json", MANIFEST)
            z.writestr("frames.jsonl", inner)
        inner = path.read_bytes()
    done = run(mcptap("import", "--db", str(tmp_path / "db.db"), str(path)), timeout=120)
    assert "bundle" in one_line_refusal(done, path)


def test_a_bundles_sarif_names_neither_the_working_folder_nor_the_command_line(tmp_path):
    from tests.hostile.test_hostile_work import imported

    private = tmp_path / "home-of-alice-private"
    private.mkdir()
    db = imported(private, "secretproject", [("c2s", '{"jsonrpc":"2.0","id":1,"method":"nope"}'),
                                             ("s2c", '{"jsonrpc":"2.0","id":1,"result":{}}')])
    out = private / "bug.zip"
    done = run(mcptap("bundle", "--db", str(db), "-o", str(out)), timeout=300, cwd=private,
               env={**os.environ, "TMPDIR": str(private)})
    assert done.returncode == 0, done.stderr.decode()
    with zipfile.ZipFile(out) as z:
        text = z.read("analysis.sarif").decode("utf-8")
    sarif = json.loads(text)
    assert sarif["runs"][0]["results"], "the bundle's SARIF carries its findings"
    assert "home-of-alice-private" not in text and "secretproject" not in text and "bug.zip" not in text
    invocation = sarif["runs"][0]["invocations"][0]
    assert not {"commandLine", "arguments", "workingDirectory"} & set(invocation)
