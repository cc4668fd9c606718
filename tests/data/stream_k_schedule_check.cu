// Appended to a rendered stream-K gemm source (wgmma or simt) by tests/test_author.py and run on
// the host (no GPU needed): Schedule (streamk.cuh) is __host__ __device__, so the exact device
// code is checked. For every (tiles T, k-blocks per tile, CTAs g) case:
//   - every (tile, k-block) exactly once;
//   - a cut tile's pieces: one owner's (from k-block 0, its CTA's last unit) and contributors'
//     (not from k-block 0; at most one per CTA, so one workspace slot per CTA is enough), and the
//     CTAs the owner absorbs from (contributors_end) are exactly the tile's contributors; no CTA
//     waits (as an owner) before it has published (as a contributor), so nothing can deadlock;
//   - SK_SPREAD = 1, with tiles left over: at most T % g + g tiles are cut, in at most two pieces
//     each, and every CTA ends with the same number of k-blocks, give or take one;
//   - SK_SPREAD = 0: with few tiles left over (2 (T % g) <= g) only those are cut, in at most
//     SK_PIECES + 2 pieces each (a CTA's range is rounded and need not start on a tile); with
//     more, none.
#include <cstdio>
#include <vector>
int main() {
  int bad = 0, cases = 0, cut = 0;
  for (int g = 1; g <= 170; g += 11)
    for (int T = 1; T <= 700; T += 7)
      for (int nkb = 1; nkb <= 70; nkb += 9) {
        ++cases;
        std::vector<int> seen(T * nkb, 0), owner(T, -1), owner_end(T, -1), contributors(T, 0),
            lo(T, 1 << 30), hi(T, -1);
        int kmin = 1 << 30, kmax = 0;
        for (int c = 0; c < g; ++c) {
          Schedule w(T, nkb, c, g);
          int t, a, b, n_units = 0, n_contrib = 0, owned_at = -1, kblocks = 0;
          while (w.next(t, a, b)) {
            ++n_units;
            if (b <= a || t < 0 || t >= T) { ++bad; break; }
            kblocks += b - a;
            for (int k = a; k < b; ++k) seen[t * nkb + k]++;
            if (b - a == nkb) continue;
            if (a > 0) {  // a contributor: publishes before it could ever wait
              if (++n_contrib > 1 || owned_at != -1) ++bad;
              ++contributors[t];
              lo[t] = c < lo[t] ? c : lo[t];
              hi[t] = c > hi[t] ? c : hi[t];
            } else {
              if (owner[t] != -1 || owned_at != -1) ++bad;
              owner[t] = c;
              owner_end[t] = w.contributors_end(t, c);
              owned_at = n_units;
            }
          }
          if (owned_at != -1 && owned_at != n_units) ++bad;  // the owner's piece is last
          kmin = kblocks < kmin ? kblocks : kmin;
          kmax = kblocks > kmax ? kblocks : kmax;
        }
        for (int x : seen) bad += x != 1;
        const int left = T > g && g <= SK_SLOTS ? T % g : 0;
        const bool spread = SK_SPREAD && left;
        int cut_here = 0;
        for (int t = 0; t < T; ++t) {
          if (!contributors[t]) continue;
          ++cut;
          ++cut_here;
#if SK_SPREAD
          if (contributors[t] + 1 > 2) ++bad;
#else
          if (contributors[t] + 1 > SK_PIECES + 2) ++bad;
#endif
          if (owner[t] < 0 || lo[t] != owner[t] + 1 || hi[t] + 1 != owner_end[t] ||
              hi[t] - lo[t] + 1 != contributors[t])
            ++bad;
        }
        if (cut_here > (spread ? left + g : 2 * left > g ? 0 : left)) ++bad;
        if (spread && kmax - kmin > 1) ++bad;
      }
  printf("%d cases, %d cut tiles, %d problems\n", cases, cut, bad);
  return bad != 0;
}
