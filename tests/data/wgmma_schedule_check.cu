// Appended to a rendered stream-K wgmma source by tests/test_author.py and run on the host (no
// GPU needed): the Schedule struct is __host__ __device__ so the exact device code is checked.
#include <cstdio>
#include <vector>
// Every (tile, k-block) exactly once; a cut tile's pieces: one owner's (from k-block 0, the CTA's
// last unit) and contributors' (each its CTA's first cut-tile unit, not from k-block 0), and the
// CTAs the owner absorbs from (contributors_end) are exactly the tile's contributors; a cut tile
// has at most SK_PIECES + 2 pieces (a CTA's range is cut * nkb / users k-blocks, rounded, and need
// not start on a tile), only the last round's tiles (T % g) are cut, and none when the CTAs
// cannot give each of them two pieces (2 * (T % g) > g).
int main() {
  int bad = 0, cases = 0, cut = 0;
  for (int g = 1; g <= 170; g += 11)
    for (int T = 1; T <= 700; T += 7)
      for (int nkb = 1; nkb <= 70; nkb += 9) {
        ++cases;
        std::vector<int> seen(T * nkb, 0), owner(T, -1), owner_end(T, -1), contributors(T, 0),
            lo(T, 1 << 30), hi(T, -1);
        for (int c = 0; c < g; ++c) {
          Schedule w(T, nkb, c, g);
          int t, a, b, n_cut = 0, n_units = 0, last_owned = -1;
          while (w.next(t, a, b)) {
            ++n_units;
            if (b <= a || t < 0 || t >= T) { ++bad; break; }
            for (int k = a; k < b; ++k) seen[t * nkb + k]++;
            if (b - a < nkb) {
              if (a > 0) {  // a contributor: its first piece of a cut tile
                if (n_cut != 0) ++bad;
                ++contributors[t];
                lo[t] = c < lo[t] ? c : lo[t];
                hi[t] = c > hi[t] ? c : hi[t];
              } else {
                if (owner[t] != -1) ++bad;
                owner[t] = c;
                owner_end[t] = w.contributors_end(t, c);
                last_owned = n_units;
              }
              ++n_cut;
            } else if (n_cut) {
              ++bad;  // whole tiles come before the cut ones
            }
          }
          if (last_owned != -1 && last_owned != n_units) ++bad;  // the owner's piece is last
        }
        for (int x : seen) bad += x != 1;
        int cut_here = 0;
        for (int t = 0; t < T; ++t) {
          if (!contributors[t]) continue;
          ++cut;
          ++cut_here;
          if (contributors[t] + 1 > SK_PIECES + 2) ++bad;
          if (owner[t] < 0 || lo[t] != owner[t] + 1 || hi[t] + 1 != owner_end[t] ||
              hi[t] - lo[t] + 1 != contributors[t])
            ++bad;
        }
        if (cut_here > T % g || (cut_here && 2 * (T % g) > g)) ++bad;
      }
  printf("%d cases, %d cut tiles, %d problems\n", cases, cut, bad);
  return bad != 0;
}
