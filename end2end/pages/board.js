// The triage board: problems, one row per root cause.
export class Board {
  constructor(page) {
    this.page = page;
    this.summary = page.getByTestId('board-summary');
  }

  async open(query = '') {
    await this.page.goto(`/${query}`);
  }

  /// The problem row whose root is a rule on an object (`cluster/namespace/Kind/name`).
  problem(object, cause) {
    return this.page.locator(`[data-testid="problem-row"][data-object="${object}"][data-cause="${cause}"]`);
  }

  /// The problem row that names a host.
  problemFor(host) {
    return this.page.getByTestId('problem-row').filter({ has: this.page.locator('.hosts').getByRole('link', { name: host, exact: true }) });
  }

  /// Opens the problem's diagnosis (the root object's page).
  async openProblem(object, cause) {
    await this.problem(object, cause).locator('a.diagnosis').click();
  }
}
