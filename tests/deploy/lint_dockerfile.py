#!/usr/bin/env python3
"""Structure checks for deploy/Dockerfile, since no Docker engine runs in CI.

Checks that the image is built the way issues 9 and 16 ask (multi-stage, Debian bookworm build
reusing scripts/install-deps.sh, a `kgpu-binary` stage that a prebuilt binary can replace, the
runtime libraries gathered in a bookworm-slim stage, a `scratch` runtime, non-root user, kgpu
entrypoint, OCI labels, the NVIDIA runtime environment), that every file it copies exists in the
repository, and that every
Debian package it installs is real: named in scripts/install-deps.sh, installed on this machine
(the runtime libraries come in as dependencies of the -dev packages), or known to apt-cache.

Usage: lint_dockerfile.py REPO_ROOT [DOCKERFILE]   exit 0: clean; 1: problems listed.
"""
import os
import re
import shlex
import subprocess
import sys


def instructions(text):
    """(line number, KEYWORD, arguments) with continuations joined and comments dropped."""
    out, buf, start = [], "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if buf and line.lstrip().startswith("#"):
            continue  # comment lines inside a continuation are dropped by Docker too
        if not buf:
            start = number
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        keyword, _, args = buf.strip().partition(" ")
        out.append((start, keyword.upper(), args.strip()))
        buf = ""
    if buf:
        out.append((start, "UNTERMINATED", buf))
    return out


def install_deps_packages(root):
    text = open(os.path.join(root, "scripts", "install-deps.sh"), encoding="utf-8").read()
    match = re.search(r"packages=\((.*?)\)", text, re.S)
    if not match:
        return set()
    body = "\n".join(l.split("#", 1)[0] for l in match.group(1).splitlines())
    return set(body.split())


def package_exists(name, listed):
    if name in listed:
        return True
    if subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True,
                      text=True).stdout.startswith("install ok installed"):
        return True
    return subprocess.run(["apt-cache", "show", name], capture_output=True).returncode == 0


def apt_packages(run_args):
    """Package names after `apt-get install` in a RUN line (options skipped)."""
    names = []
    for command in re.split(r"&&|;|\|\|", run_args):
        words = shlex.split(command)
        if len(words) >= 2 and words[0].endswith("apt-get") and "install" in words:
            after = words[words.index("install") + 1:]
            names += [w for w in after if not w.startswith("-")]
    return names


def lint(root, dockerfile):
    problems = []
    bad = lambda n, msg: problems.append(f"{os.path.relpath(dockerfile, root)}:{n}: {msg}")
    ins = instructions(open(dockerfile, encoding="utf-8").read())
    listed = install_deps_packages(root)
    known = {"FROM", "RUN", "COPY", "ENV", "ARG", "LABEL", "USER", "WORKDIR", "ENTRYPOINT", "CMD",
             "EXPOSE", "VOLUME", "HEALTHCHECK", "SHELL", "STOPSIGNAL", "ADD", "ONBUILD"}
    stages, current = [], None
    for n, kw, args in ins:
        if kw not in known:
            bad(n, f"unknown instruction {kw}")
            continue
        if kw != "FROM" and kw != "ARG" and current is None:
            bad(n, f"{kw} before the first FROM")
            continue
        if kw == "FROM":
            words = args.split()
            image = words[0]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            if image != "scratch" and (":" not in image or image.endswith(":latest")):
                bad(n, f"image {image} must have a pinned, non-latest tag")
            current = {"image": image, "name": name, "line": n, "ins": []}
            stages.append(current)
            continue
        current["ins"].append((n, kw, args))

    if not stages:
        bad(1, "no FROM")
        return problems
    if len(stages) < 2:
        bad(1, "must be multi-stage (a build stage and a runtime stage)")
    build, final = stages[0], stages[-1]
    if build["image"] != "debian:bookworm":
        bad(build["line"], "the build stage must be debian:bookworm (the CI platform)")
    if final["image"] != "scratch":
        bad(final["line"], "the runtime stage must be scratch (the binary and the libraries it links only)")
    if not any(s["image"] == "debian:bookworm-slim" for s in stages[1:-1]):
        bad(final["line"], "the runtime libraries must come from a debian:bookworm-slim stage")
    stage_names = {s["name"] for s in stages if s["name"]}
    # CI ships the kgpu it built with `--build-context kgpu-binary=DIR`, which replaces this stage.
    if "kgpu-binary" not in stage_names:
        bad(build["line"], "a stage named kgpu-binary must hold the executable (CI replaces it)")

    def in_stage(stage, kw):
        return [(n, a) for n, k, a in stage["ins"] if k == kw]

    if not any("scripts/install-deps.sh" in a for _, a in in_stage(build, "RUN")):
        bad(build["line"], "the build stage must install dependencies with scripts/install-deps.sh")
    if not any("--target kgpu" in a for _, a in in_stage(build, "RUN")):
        bad(build["line"], "the build stage must build the kgpu target")
    if "add_executable(kgpu " not in open(os.path.join(root, "src", "cli", "CMakeLists.txt")).read():
        bad(build["line"], "src/cli/CMakeLists.txt no longer defines the kgpu executable")

    for stage in stages:
        for n, kw, args in stage["ins"]:
            if kw == "ADD":
                bad(n, "use COPY, not ADD")
            if kw == "COPY":
                words = [w for w in shlex.split(args)]
                from_stage = next((w.split("=", 1)[1] for w in words if w.startswith("--from=")), None)
                paths = [w for w in words if not w.startswith("--")]
                if len(paths) < 2:
                    bad(n, "COPY needs a source and a destination")
                    continue
                if from_stage is not None:
                    if from_stage not in stage_names:
                        bad(n, f"COPY --from={from_stage}: no such stage")
                    continue
                for src in paths[:-1]:
                    if not os.path.exists(os.path.join(root, src)):
                        bad(n, f"COPY source {src} does not exist in the repository")
            if kw == "RUN":
                if "apt-get install" in args:
                    if "--no-install-recommends" not in args:
                        bad(n, "apt-get install without --no-install-recommends")
                    if "apt-get update" in args and "rm -rf /var/lib/apt/lists" not in args:
                        bad(n, "apt lists not removed in the same layer")
                    for pkg in apt_packages(args):
                        if not package_exists(pkg, listed):
                            bad(n, f"Debian package {pkg} not found (install-deps.sh, dpkg, apt-cache)")
                for word in shlex.split(args.replace("&&", " ")):
                    if word.startswith("/src/") and word.endswith(".sh"):
                        if not os.path.exists(os.path.join(root, word[len("/src/"):])):
                            bad(n, f"RUN uses {word}, which is not in the repository")

    users = in_stage(final, "USER")
    if not users or users[-1][1].split(":")[0] in ("0", "root"):
        bad(final["line"], "the runtime stage must switch to a non-root USER")
    entry = in_stage(final, "ENTRYPOINT")
    if not entry or "kgpu" not in entry[-1][1] or not entry[-1][1].startswith("["):
        bad(final["line"], "ENTRYPOINT must be the kgpu binary, exec form")
    cmd = in_stage(final, "CMD")
    if not cmd or '"plugin"' not in cmd[-1][1]:
        bad(final["line"], 'CMD must default to ["plugin"]')
    env = " ".join(a for _, a in in_stage(final, "ENV"))
    for pair in ("NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility"):
        if pair not in env:
            bad(final["line"], f"runtime stage must set ENV {pair}")
    labels = " ".join(a for _, a in in_stage(final, "LABEL"))
    for key in ("org.opencontainers.image.title", "org.opencontainers.image.version",
                "org.opencontainers.image.description"):
        if key + "=" not in labels:
            bad(final["line"], f"missing OCI label {key}")
    copies_binary = [a for s in stages[1:] for _, a in in_stage(s, "COPY") if "--from=" in a and "kgpu" in a]
    if not copies_binary or not any("--from=" in a for _, a in in_stage(final, "COPY")):
        bad(final["line"], "the runtime stage must copy the kgpu binary from the build stage")
    return problems


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    root = os.path.abspath(sys.argv[1])
    dockerfile = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "deploy", "Dockerfile")
    problems = lint(root, dockerfile)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"lint_dockerfile: {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
