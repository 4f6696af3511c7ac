// Issue 10, 2026-11-28 (second session): how many cold cache lines a unit of work can meet
// on this VM before prefetching stops hiding them. Not part of the build; a plain C program so
// that no part of hipsec is in the way. Each "item" is `L` lines in each of `R` regions (an
// object of `stride` bytes per region), visited in the scattered order `bench sas` uses
// (stride 7919), with every line of the item `ahead` items later prefetched (_MM_HINT_T0)
// before ~170 ns of dependent arithmetic (about one 128-byte packet's seal). The figure is the
// best of five passes of 2,000,000 items, ns per item.
//
//   gcc -O2 -o prefetch-lines prefetch-lines.c
//   taskset -c 1 ./prefetch-lines N R L AHEAD HUGE [STRIDE]
//
// HUGE=1 asks for transparent huge pages (madvise); STRIDE defaults to L*64 (packed).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <xmmintrin.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s N R L AHEAD HUGE [STRIDE]\n", argv[0]);
    return 2;
  }
  long n = atol(argv[1]);
  int R = atoi(argv[2]), L = atoi(argv[3]), ahead = atoi(argv[4]), huge = atoi(argv[5]);
  long objsz = argc > 6 ? atol(argv[6]) : L * 64;
  if (n < 1 || R < 1 || R > 16 || L < 1 || objsz < L * 64) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  char *base[16];
  for (int r = 0; r < R; r++) {
    size_t sz = n * objsz + (2 << 20);
    base[r] = mmap(0, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base[r] == MAP_FAILED) return 1;
    madvise(base[r], sz, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    memset(base[r], 1, sz);
  }
  const long iters = 2000000, stride = 7919;
  volatile uint64_t sink;
  uint64_t acc = 1;
  double best = 1e18;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    for (long i = 0; i < iters; i++) {
      long o = ((i + ahead) * stride) % n;
      if (ahead)
        for (int r = 0; r < R; r++)
          for (int l = 0; l < L; l++) _mm_prefetch(base[r] + o * objsz + l * 64, _MM_HINT_T0);
      long c = (i * stride) % n;
      for (int r = 0; r < R; r++)
        for (int l = 0; l < L; l++) acc += *(uint64_t *)(base[r] + c * objsz + l * 64);
      for (int k = 0; k < 150; k++) acc = acc * 6364136223846793005ULL + 1442695040888963407ULL;
    }
    double t = (now() - t0) / iters;
    if (t < best) best = t;
  }
  sink = acc;
  (void)sink;
  printf("n=%ld R=%d L=%d ahead=%d huge=%d stride=%ld: %.1f ns/item (%.1f MB)\n", n, R, L, ahead,
         huge, objsz, best, (double)n * objsz * R / 1e6);
  return 0;
}
