//! The lists of the Let's Encrypt budgets and their forecast.

use lookout_app::model::budget::{Budget, DomainForecast};
use lookout_app::model::read::views::BudgetQuery;
use lookout_app::model::View;

use super::Items;
use lookout_app::pages;

use super::{List, ListPage};
use crate::auth::Caller;
use crate::http::pages::shell;
use crate::http::session::CsrfToken;
use crate::http::{load, query, AppError, AppState};

/// The Let's Encrypt budgets.
pub(in crate::http) struct Budgets;

impl List for Budgets {
    const NAME: &'static str = "rate-limits";
    type Query = BudgetQuery;
    type Row = Budget;
    type Answer = Items<Budget>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<BudgetQuery, AppError> {
        query::budget_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &BudgetQuery,
    ) -> Result<Items<Budget>, AppError> {
        Ok(Items {
            items: load::budgets(state, view, q),
        })
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &BudgetQuery,
    ) -> Result<(Vec<Budget>, bool), AppError> {
        Ok((load::budgets(state, view, q), false))
    }
}

impl ListPage for Budgets {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &BudgetQuery,
    ) -> Result<String, AppError> {
        Ok(pages::rate_limits::page(
            &shell(state, caller, csrf),
            q,
            load::budgets(state, &caller.view, q),
            &load::forecast(state, &caller.view, q),
        ))
    }
}

/// The next week's issuances against the budgets, per registered domain.
pub(in crate::http) struct Forecast;

impl List for Forecast {
    const NAME: &'static str = "forecast";
    type Query = BudgetQuery;
    type Row = DomainForecast;
    type Answer = Items<DomainForecast>;

    fn query(_: &AppState, raw: Option<&str>) -> Result<BudgetQuery, AppError> {
        query::budget_query(raw)
    }

    async fn answer(
        state: &AppState,
        view: &View,
        q: &BudgetQuery,
    ) -> Result<Items<DomainForecast>, AppError> {
        Ok(Items {
            items: load::forecast(state, view, q),
        })
    }

    async fn every(
        state: &AppState,
        view: &View,
        q: &BudgetQuery,
    ) -> Result<(Vec<DomainForecast>, bool), AppError> {
        Ok((load::forecast(state, view, q), false))
    }
}

impl ListPage for Forecast {
    async fn page(
        state: &AppState,
        caller: &Caller,
        csrf: &CsrfToken,
        q: &BudgetQuery,
    ) -> Result<String, AppError> {
        Ok(pages::forecast::page(
            &shell(state, caller, csrf),
            q,
            &load::forecast(state, &caller.view, q),
        ))
    }
}
