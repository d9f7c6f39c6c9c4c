package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// User is a person who signs in with e-mail and password.
type User struct {
	ID           uuid.UUID `db:"id"`
	Email        string    `db:"email"`
	PasswordHash string    `db:"password_hash"`
	FirstName    string    `db:"first_name"`
	LastName     string    `db:"last_name"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
}

// FullName is "First Last".
func (u User) FullName() string {
	if u.LastName == "" {
		return u.FirstName
	}
	return u.FirstName + " " + u.LastName
}

const userCols = `id, email, password_hash, first_name, last_name, created_at, updated_at`

const insertUserSQL = `
INSERT INTO users (id, email, password_hash, first_name, last_name)
VALUES ($1, $2, $3, $4, $5)
RETURNING ` + userCols

// CreateUser inserts a user; ErrConflict when the e-mail is taken.
func CreateUser(ctx context.Context, db DBTX, u User) (User, error) {
	rows, _ := db.Query(ctx, insertUserSQL, u.ID, u.Email, u.PasswordHash, u.FirstName, u.LastName)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
	return out, mapErr(err)
}

// UserByEmail finds a user by e-mail, case-insensitively.
func UserByEmail(ctx context.Context, db DBTX, email string) (User, error) {
	rows, _ := db.Query(ctx, `SELECT `+userCols+` FROM users WHERE lower(email) = lower($1)`, email)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
	return out, mapErr(err)
}

// UserByID finds a user by id.
func UserByID(ctx context.Context, db DBTX, id uuid.UUID) (User, error) {
	rows, _ := db.Query(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[User])
	return out, mapErr(err)
}

// Signup creates a user and, when orgName is not nil, an organization the
// user owns, in one transaction: a failure leaves neither behind. Only a
// taken e-mail is ErrConflict (a taken slug gets a suffix).
func Signup(ctx context.Context, s *Store, u User, orgName *string) (User, *Organization, error) {
	var user User
	var org *Organization
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if user, err = CreateUser(ctx, tx, u); err != nil {
			return err
		}
		if orgName == nil {
			return nil
		}
		o, err := NewOrganization(ctx, tx, *orgName, user.ID)
		if err != nil {
			return err
		}
		org = &o
		return nil
	})
	if err != nil {
		return User{}, nil, err
	}
	return user, org, nil
}
