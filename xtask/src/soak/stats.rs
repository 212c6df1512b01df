//! The soak's figures: the least-squares slope of a sampled quantity over a run whose process
//! restarts (each restart starts a new series with its own level), and percentiles of round
//! trips. Pure functions, so that the numbers the report and its bounds rest on are tested.

/// One sample of a series: seconds since the series' process started, and the value.
pub(crate) type Sample = (f64, f64);

/// The least-squares slope, per second, shared by several series that may each sit at a level
/// of their own (a restarted server starts from a fresh resident size): the "within" estimator
/// of a regression with one intercept per series. Every series is centred on its own means, so
/// a restart's jump never reads as growth, and each series weighs by how much of the run it
/// covers. `None` when the samples cannot define a slope (fewer than two distinct times in
/// every series).
pub(crate) fn pooled_slope(series: &[Vec<Sample>]) -> Option<f64> {
    let mut numerator = 0.0;
    let mut denominator = 0.0;
    for samples in series {
        if samples.len() < 2 {
            continue;
        }
        let count = samples.len() as f64;
        let mean_t = samples.iter().map(|(t, _)| t).sum::<f64>() / count;
        let mean_v = samples.iter().map(|(_, v)| v).sum::<f64>() / count;
        for (t, v) in samples {
            numerator += (t - mean_t) * (v - mean_v);
            denominator += (t - mean_t) * (t - mean_t);
        }
    }
    (denominator > 0.0).then(|| numerator / denominator)
}

/// The `q` quantile (0.0 to 1.0) of `values` by the nearest-rank method: the smallest value
/// that at least `q` of the values do not exceed. `None` for no values.
pub(crate) fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q.clamp(0.0, 1.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(start: f64, level: f64, slope: f64, points: usize) -> Vec<Sample> {
        (0..points)
            .map(|i| {
                let t = start + i as f64;
                (t, level + slope * t)
            })
            .collect()
    }

    #[test]
    fn the_slope_of_one_line_is_its_gradient() {
        let slope = pooled_slope(&[line(0.0, 100.0, 0.25, 60)]).expect("a slope");
        assert!((slope - 0.25).abs() < 1e-9, "{slope}");
    }

    #[test]
    fn a_restart_to_another_level_is_not_growth() {
        // Two flat lives, the second at a much higher level: pooling the raw samples would
        // report growth; centring each life does not.
        let flat =
            pooled_slope(&[line(0.0, 50.0, 0.0, 30), line(0.0, 90.0, 0.0, 30)]).expect("a slope");
        assert!(flat.abs() < 1e-9, "{flat}");
        // Two lives growing at the same rate from different levels give that rate.
        let growing =
            pooled_slope(&[line(0.0, 10.0, 2.0, 20), line(5.0, 500.0, 2.0, 40)]).expect("a slope");
        assert!((growing - 2.0).abs() < 1e-9, "{growing}");
    }

    #[test]
    fn longer_lives_weigh_more() {
        // A long flat life and a short steep one: the pooled slope lies between, nearer the
        // long life's.
        let slope =
            pooled_slope(&[line(0.0, 0.0, 0.0, 100), line(0.0, 0.0, 1.0, 10)]).expect("a slope");
        assert!(slope > 0.0 && slope < 0.01, "{slope}");
    }

    #[test]
    fn noise_around_a_flat_level_gives_a_small_slope() {
        let samples: Vec<Sample> = (0..120)
            .map(|i| (i as f64, 100.0 + if i % 2 == 0 { 3.0 } else { -3.0 }))
            .collect();
        let slope = pooled_slope(&[samples]).expect("a slope");
        assert!(slope.abs() < 0.01, "{slope}");
    }

    #[test]
    fn no_slope_without_two_times() {
        assert_eq!(pooled_slope(&[]), None);
        assert_eq!(pooled_slope(&[vec![(1.0, 5.0)]]), None);
        assert_eq!(pooled_slope(&[vec![(1.0, 5.0), (1.0, 9.0)]]), None);
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&values, 0.99), Some(99.0));
        assert_eq!(quantile(&values, 0.5), Some(50.0));
        assert_eq!(quantile(&values, 1.0), Some(100.0));
        assert_eq!(quantile(&values, 0.0), Some(1.0));
        // One slow round trip in a hundred is the p99; two are above it.
        let mut slow = vec![1.0; 98];
        slow.extend([500.0, 700.0]);
        assert_eq!(quantile(&slow, 0.99), Some(500.0));
        assert_eq!(quantile(&[], 0.99), None);
    }
}
